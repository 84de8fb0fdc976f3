
"""Benchmark matmul against cuBLAS (torch.mm, TF32 off) and torch.compile.

    python benchmarks/bench_matmul.py                 # CUDA if visible, else CPU
    python benchmarks/bench_matmul.py --dtype float16 --json results.json

For square M = N = K from 256 to 4096, and sizes no tile divides: the median time of the
op, of torch.mm (cuBLAS on CUDA, with TF32 off so that float32 means float32) and of
torch.compile(a @ b); TFLOP/s counts 2·M·N·K; "% cuBLAS" is the op's rate over
torch.mm's, measured in the same run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time

import torch

from several_ops import matmul as op
from several_ops.matmul_reference import reference

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def median_us(fn, device: str, calls: int = 1, min_seconds: float = 0.2,
              min_reps: int = 10) -> float:
    """Median time of one call of fn, in microseconds, after a warm-up.

    Each sample times `calls` calls back to back and divides by `calls`. On CUDA with
    events on the current stream, so only device time between the two events counts; on
    the CPU with a wall clock.
    """
    for _ in range(3):
        fn()
    times = []
    started = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - started < min_seconds:
        if device == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) * 1e3 / calls)
        else:
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times.append((time.perf_counter() - t0) * 1e6 / calls)
        if len(times) >= 1000:
            break
    return statistics.median(times)


def device_name(device: str) -> str:
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def write_json(path: str, dtype: str, device: str, rows: list[dict]) -> None:
    with open(path, "w") as f:
        json.dump({
            "op": "matmul",
            "dtype": dtype,
            "device": device_name(device),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "date": datetime.date.today().isoformat(),
            "rows": rows,
        }, f, indent=2)


# Square sizes, and sizes that no 64-wide tile divides.
SIZES = [(256, 256, 256), (512, 512, 512), (1000, 1000, 1000), (1024, 1024, 1024),
         (2048, 2048, 2048), (4096, 4096, 4096), (4099, 1027, 2053)]


def bench_size(m: int, k: int, n: int, dtype: torch.dtype, device: str) -> dict:
    a = torch.randn(m, k, dtype=dtype, device=device)
    b = torch.randn(k, n, dtype=dtype, device=device)
    torch._dynamo.reset()  # a fresh compile per size, never a recompile limit
    compiled = torch.compile(reference, fullgraph=True)
    times = {
        "op": median_us(lambda: op(a, b), device),
        "cublas": median_us(lambda: torch.mm(a, b), device),
        "compile": median_us(lambda: compiled(a, b), device),
    }
    flops = 2 * m * n * k
    tflops = {key: flops / t / 1e6 for key, t in times.items()}
    return {
        "shape": [m, k, n],
        **{f"{key}_us": round(t, 2) for key, t in times.items()},
        **{f"{key}_TFLOPs": round(rate, 2) for key, rate in tflops.items()},
        "percent_of_cublas": round(100 * tflops["op"] / tflops["cublas"], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", choices=list(DTYPES), default=next(iter(DTYPES)))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--max-size", type=int, default=None,
                        help="skip sizes with a side above this (default: 1024 on the CPU)")
    parser.add_argument("--json", metavar="FILE", help="also write the results to FILE")
    args = parser.parse_args()
    device_type = torch.device(args.device).type
    max_size = args.max_size or (1 << 30 if device_type == "cuda" else 1024)
    # TF32 would make "float32" a 10-bit-mantissa product: compare like with like.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    rows = []
    print(f"matmul {args.dtype} on {device_name(args.device)}, torch {torch.__version__}")
    print(f"{'M x K x N':>18} {'op us':>10} {'cuBLAS us':>10} {'compile us':>10} "
          f"{'op TFLOP/s':>10} {'cuBLAS':>8} {'% cuBLAS':>8}")
    for m, k, n in SIZES:
        if max(m, k, n) > max_size:
            continue
        row = bench_size(m, k, n, DTYPES[args.dtype], device_type)
        rows.append(row)
        print(f"{f'{m}x{k}x{n}':>18} {row['op_us']:>10.1f} {row['cublas_us']:>10.1f} "
              f"{row['compile_us']:>10.1f} {row['op_TFLOPs']:>10.2f} {row['cublas_TFLOPs']:>8.2f} "
              f"{row['percent_of_cublas']:>8.1f}", flush=True)
    if args.json:
        write_json(args.json, args.dtype, args.device, rows)


if __name__ == "__main__":
    main()
