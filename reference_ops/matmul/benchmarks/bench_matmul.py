"""Benchmark matmul against cuBLAS (torch.mm, TF32 off) and torch.compile.

    python benchmarks/bench_matmul.py

On CUDA if a GPU is visible, else on the CPU; --dtype float16 times another dtype, --json
results.json writes the results to a file too (--help lists every option).

For square M = N = K from 256 to 4096, and sizes no tile divides: the median time of the
op, of torch.mm (cuBLAS on CUDA, with TF32 off so that float32 means float32) and of
torch.compile(a @ b); TFLOP/s counts 2·M·N·K; "% cuBLAS" is the op's rate over
torch.mm's, measured in the same run.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import json
import statistics
import sys
import tempfile
import time
import warnings

import torch
from torch.autograd.profiler_util import EventList, FunctionEventAvg

from matmul import DEBUG_BUILD
from matmul import matmul as op
from matmul import matmul_reference as reference_module

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def sample_us(fn, device: str, calls: int) -> float:
    """The time of one call of fn, in microseconds, over `calls` calls back to back.

    On CUDA with events on the current stream, so only device time between the two events
    counts; on the CPU with a wall clock.
    """
    if device == "cuda":
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return begin.elapsed_time(end) * 1e3 / calls
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) * 1e6 / calls


def medians_us(
    candidates: dict, device: str, calls: int = 1, min_seconds: float = 0.2, min_rounds: int = 10
) -> dict[str, float]:
    """The median sample_us of each candidate (name: function), after a warm-up.

    The candidates take turns, one sample each a round, so that a drift of the machine
    (other jobs on a shared host, its clocks) falls on all of them alike and the ratios
    between them hold; timed one after the other, a 2-core virtual machine's drift alone
    moved a ratio by 20%.
    """
    for fn in candidates.values():
        for _ in range(3):
            fn()
    times: dict[str, list[float]] = {name: [] for name in candidates}
    budget = min_seconds * len(candidates)
    started = time.perf_counter()
    rounds = 0
    while rounds < min_rounds or time.perf_counter() - started < budget:
        for name, fn in candidates.items():
            times[name].append(sample_us(fn, device, calls))
        rounds += 1
        if rounds >= 1000:
            break
    return {name: statistics.median(kept) for name, kept in times.items()}


# --profile: after each group of candidates is timed (warm: compiled, cached), one more
# pass of theirs is recorded, under a profiler of its own, so that neither compiling nor
# the thousands of timed calls fill the trace. main prints and writes them all at the end.
PROFILES: list | None = None


def time_all(candidates: dict, device: str, label: str, calls: int = 1) -> dict[str, float]:
    """medians_us of the candidates (name: function); with --profile, then a profiled pass."""
    times = medians_us(candidates, device, calls)
    if PROFILES is not None:
        PROFILES.append(profile_pass(candidates, device, label, calls))
    return times


def profile_pass(candidates: dict, device: str, label: str, calls: int):
    """`calls` calls of each candidate under torch.profiler, in a range named after it and label."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with warnings.catch_warnings():
        # Said by some torch versions of every profiler without a schedule; this one has none.
        warnings.filterwarnings("ignore", message=".*Profiler clears events at the end")
        with torch.profiler.profile(activities=activities) as profile:
            for name, fn in candidates.items():
                with torch.profiler.record_function(f"{name} {label}"):
                    for _ in range(calls):
                        fn()
                    if device == "cuda":
                        torch.cuda.synchronize()
    return profile


@contextlib.contextmanager
def profiled(path: str | None, device: str):
    """With a path (--profile): profile the run's candidates (see PROFILES); at the end print
    the table of kernels and ranges by device time (CPU time on the CPU) and write the trace
    to path. Without one: nothing."""
    global PROFILES
    if not path:
        yield
        return
    PROFILES = []
    try:
        yield
    finally:
        profiles, PROFILES = PROFILES, None
    # Each pass's averages, summed by name over the passes: one table for the run.
    totals = collections.defaultdict(FunctionEventAvg)
    for profile in profiles:
        for average in profile.key_averages():
            totals[average.key].add(average)
    on_device = torch.device(device).type == "cuda"
    table = EventList(totals.values(), use_device="cuda" if on_device else None)
    sort_by = "self_device_time_total" if on_device else "self_cpu_time_total"
    print(table.table(sort_by=sort_by, row_limit=30))
    write_trace(profiles, path)
    print(
        f"trace of {len(profiles)} profiled passes written to {path}: open it in "
        "https://ui.perfetto.dev or chrome://tracing"
    )


def write_trace(profiles: list, path: str) -> None:
    """The passes' Chrome traces as one: taken in one process, their times share one clock."""
    merged = None
    with tempfile.TemporaryDirectory() as directory:
        for i, profile in enumerate(profiles):
            profile.export_chrome_trace(f"{directory}/{i}.json")
            with open(f"{directory}/{i}.json") as f:
                trace = json.load(f)
            if merged is None:
                merged = trace
            else:
                merged["traceEvents"] += trace["traceEvents"]
    with open(path, "w") as f:
        json.dump(merged or {"traceEvents": []}, f)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """--json and --profile, which every benchmark takes."""
    parser.add_argument("--json", metavar="FILE", help="also write the results to FILE")
    parser.add_argument(
        "--profile",
        metavar="TRACE",
        help=(
            "also profile each candidate once more after timing it: print the "
            "kernel-time table, write the torch.profiler trace to TRACE (JSON)"
        ),
    )


def warn_if_debug_build() -> None:
    if DEBUG_BUILD:
        print(
            "warning: matmul is a debug build (MATMUL_DEBUG=1: -G -O0), several times slower than "
            "a release build; rebuild without it to benchmark",
            file=sys.stderr,
        )


def device_name(device: str) -> str:
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def write_json(path: str, dtype: str, device: str, rows: list[dict]) -> None:
    with open(path, "w") as f:
        json.dump(
            {
                "op": op.__name__,
                "dtype": dtype,
                "device": device_name(device),
                "torch": torch.__version__,
                "cuda": torch.version.cuda,
                "date": datetime.date.today().isoformat(),
                "rows": rows,
            },
            f,
            indent=2,
        )


# Square sizes, and sizes that no 64-wide tile divides.
SIZES = [
    (256, 256, 256),
    (512, 512, 512),
    (1000, 1000, 1000),
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (4099, 1027, 2053),
]


def bench_size(m: int, k: int, n: int, dtype: torch.dtype, device: str) -> dict:
    a = torch.randn(m, k, dtype=dtype, device=device)
    b = torch.randn(k, n, dtype=dtype, device=device)
    torch._dynamo.reset()  # a fresh compile per size, never a recompile limit
    compiled = torch.compile(reference_module.reference, fullgraph=True)
    candidates = {
        "op": lambda: op(a, b),
        "cublas": lambda: torch.mm(a, b),
        "compile": lambda: compiled(a, b),
    }
    times = time_all(candidates, device, f"{m}x{k}x{n}")
    flops = 2 * m * n * k
    tflops = {key: flops / t / 1e6 for key, t in times.items()}
    return {
        "shape": [m, k, n],
        **{f"{key}_us": round(t, 2) for key, t in times.items()},
        **{f"{key}_TFLOPs": round(rate, 2) for key, rate in tflops.items()},
        "percent_of_cublas": round(100 * tflops["op"] / tflops["cublas"], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", choices=list(DTYPES), default=next(iter(DTYPES)))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--max-size",
        type=int,
        default=None,
        help="skip sizes with a side above this (default: 1024 on the CPU)",
    )
    add_common_arguments(parser)
    args = parser.parse_args()
    device_type = torch.device(args.device).type
    max_size = args.max_size or (1 << 30 if device_type == "cuda" else 1024)
    # TF32 would make "float32" a 10-bit-mantissa product: compare like with like.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    warn_if_debug_build()
    rows = []
    print(f"{op.__name__} {args.dtype} on {device_name(args.device)}, torch {torch.__version__}")
    print(
        f"{'M x K x N':>18} {'op us':>10} {'cuBLAS us':>10} {'compile us':>10} "
        f"{'op TFLOP/s':>10} {'cuBLAS':>8} {'% cuBLAS':>8}"
    )
    with profiled(args.profile, device_type):
        for m, k, n in SIZES:
            if max(m, k, n) > max_size:
                continue
            row = bench_size(m, k, n, DTYPES[args.dtype], device_type)
            rows.append(row)
            print(
                f"{f'{m}x{k}x{n}':>18} {row['op_us']:>10.1f} {row['cublas_us']:>10.1f} "
                f"{row['compile_us']:>10.1f} {row['op_TFLOPs']:>10.2f} "
                f"{row['cublas_TFLOPs']:>8.2f} {row['percent_of_cublas']:>8.1f}",
                flush=True,
            )
    if args.json:
        write_json(args.json, args.dtype, args.device, rows)


if __name__ == "__main__":
    main()
