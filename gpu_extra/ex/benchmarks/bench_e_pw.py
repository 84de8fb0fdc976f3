"""Benchmark e_pw against eager PyTorch, torch.compile and a plain copy.

    python benchmarks/bench_e_pw.py

On CUDA if a GPU is visible, else on the CPU; --dtype float16 times another dtype, --json
results.json writes the results to a file too (--help lists every option).

For each size: the median time of the op (alone up to 2^20 elements: a call's cost; ten back to back
above: a call's device time); of the same expression in eager PyTorch (ex/e_pw_reference.py); of
that expression under torch.compile; and of out.copy_(x), a plain device-to-device copy, which sets
the bandwidth ceiling. GB/s counts the bytes the op must move (each input read once, the output
written once); "% copy" is that bandwidth over the copy's, measured in the same run.
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

from ex import DEBUG_BUILD
from ex import e_pw as op
from ex import e_pw_reference as reference_module

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
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
            "warning: ex is a debug build (EX_DEBUG=1: -G -O0), several times slower than a "
            "release build; rebuild without it to benchmark",
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


TENSOR_ARGS = ["x"]
SCALARS = {}


# Up to this size a call is timed alone between two events: what one call costs, its
# dispatch and launch included. Larger calls are timed ten back to back: the device time
# of one call, each one's dispatch hidden behind the kernel before it.
LATENCY_SIZE = 1 << 20


def input_shape(n: int) -> tuple:
    """Each tensor input's shape for n output elements."""
    return (n,)


def random_tensor(n: int, dtype: torch.dtype, device: str) -> torch.Tensor:
    shape = input_shape(n)
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype, device=device)
    high = min(torch.iinfo(dtype).max + 1, 1 << 16)
    return torch.randint(0, high, shape, device=device).to(dtype)


def bench_size(n: int, dtype: torch.dtype, device: str) -> dict:
    inputs = {name: random_tensor(n, dtype, device) for name in TENSOR_ARGS}
    first = inputs[TENSOR_ARGS[0]]
    copied = torch.empty_like(first)
    torch._dynamo.reset()  # a fresh compile per size, never a recompile limit
    compiled = torch.compile(reference_module.reference, fullgraph=True)
    calls = 1 if n <= LATENCY_SIZE else 10
    label = f"2^{n.bit_length() - 1}"
    candidates = {
        "op": lambda: op(**inputs, **SCALARS),
        "eager": lambda: reference_module.reference(**inputs, **SCALARS),
        "compile": lambda: compiled(**inputs, **SCALARS),
        "copy": lambda: copied.copy_(first),
    }
    times = time_all(candidates, device, label, calls)
    result = op(**inputs, **SCALARS)
    in_bytes = len(TENSOR_ARGS) * first.numel() * first.element_size()
    op_bytes = in_bytes + result.numel() * result.element_size()
    copy_bytes = 2 * first.numel() * first.element_size()
    op_gbps = op_bytes / times["op"] / 1e3
    copy_gbps = copy_bytes / times["copy"] / 1e3
    return {
        "elements": n,
        **{f"{k}_us": round(v, 3) for k, v in times.items()},
        "op_GBps": round(op_gbps, 1),
        "copy_GBps": round(copy_gbps, 1),
        "percent_of_copy": round(100 * op_gbps / copy_gbps, 1),
        "speedup_vs_eager": round(times["eager"] / times["op"], 3),
        "speedup_vs_compile": round(times["compile"] / times["op"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", choices=list(DTYPES), default=next(iter(DTYPES)))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--min-log2", type=int, default=10, help="smallest size, log2 elements")
    parser.add_argument(
        "--max-log2",
        type=int,
        default=None,
        help="largest size, log2 elements (default 28 on CUDA, 24 on the CPU)",
    )
    parser.add_argument("--step-log2", type=int, default=2)
    parser.add_argument(
        "--log2",
        type=int,
        nargs="+",
        metavar="N",
        help="exactly these sizes, log2 elements (instead of min/max/step)",
    )
    add_common_arguments(parser)
    args = parser.parse_args()
    max_log2 = args.max_log2 or (28 if args.device.startswith("cuda") else 24)
    sizes_log2 = args.log2 or range(args.min_log2, max_log2 + 1, args.step_log2)
    device_type = torch.device(args.device).type
    dtype = DTYPES[args.dtype]

    warn_if_debug_build()
    rows = []
    header = (
        f"{'elements':>10} {'op us':>10} {'eager us':>10} {'compile us':>10} "
        f"{'copy us':>10} {'op GB/s':>9} {'% copy':>7} {'x eager':>8} {'x compile':>9}"
    )
    print(f"{op.__name__} {args.dtype} on {device_name(args.device)}, torch {torch.__version__}")
    print(header)
    with profiled(args.profile, device_type):
        for log2 in sizes_log2:
            row = bench_size(1 << log2, dtype, device_type)
            rows.append(row)
            print(
                f"{'2^' + str(log2):>10} {row['op_us']:>10.2f} {row['eager_us']:>10.2f} "
                f"{row['compile_us']:>10.2f} {row['copy_us']:>10.2f} {row['op_GBps']:>9.1f} "
                f"{row['percent_of_copy']:>7.1f} {row['speedup_vs_eager']:>8.2f} "
                f"{row['speedup_vs_compile']:>9.2f}",
                flush=True,
            )
    if args.json:
        write_json(args.json, args.dtype, args.device, rows)


if __name__ == "__main__":
    main()
