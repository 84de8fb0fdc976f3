"""Benchmark embedding_bag against its reference in eager PyTorch and under torch.compile.

    python benchmarks/bench_embedding_bag.py                  # CUDA if visible, else CPU
    python benchmarks/bench_embedding_bag.py --dtype bfloat16 --sizes 4096 1048576

For each size (make_inputs' rows, embedding_bag/_embedding_bag_reference.py): the median time
of the op, of reference() in eager mode and of reference() under torch.compile, and the
bytes the op reads and writes (every input once, every output once) per microsecond.
Also a forward and backward pass (torch.autograd.grad) of each.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time

import torch
from torch import Tensor

from embedding_bag import embedding_bag as op
from embedding_bag._embedding_bag_reference import make_inputs, reference

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
GRAD_ARGS = ["weight"]
DEFAULT_SIZES = [4096, 65536, 1048576]


def median_us(fn, device: str, min_seconds: float = 0.2, min_reps: int = 10) -> float:
    """Median time of one call of fn in microseconds, after a warm-up: on CUDA with events
    on the current stream (device time only), on the CPU with a wall clock."""
    for _ in range(3):
        fn()
    times = []
    started = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - started < min_seconds:
        if device == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            fn()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) * 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
        if len(times) >= 1000:
            break
    return statistics.median(times)


def outputs(results) -> tuple[Tensor, ...]:
    return results if isinstance(results, tuple) else (results,)


def bench_size(size: int, dtype: torch.dtype, device: str) -> dict:
    inputs = make_inputs(size, dtype, device)
    torch._dynamo.reset()  # a fresh compile per size, never a recompile limit
    compiled = torch.compile(reference, fullgraph=True)
    times = {
        "op": median_us(lambda: op(**inputs), device),
        "eager": median_us(lambda: reference(**inputs), device),
        "compile": median_us(lambda: compiled(**inputs), device),
    }
    leaves = {
        k: v.detach().requires_grad_(True) if k in GRAD_ARGS else v for k, v in inputs.items()
    }
    differentiable = [leaves[k] for k in GRAD_ARGS]

    def forward_backward(fn):
        def run():
            results = [t for t in outputs(fn(**leaves)) if t.requires_grad]
            return torch.autograd.grad(sum(t.sum() for t in results), differentiable)

        return run

    times["op_fwd_bwd"] = median_us(forward_backward(op), device)
    times["eager_fwd_bwd"] = median_us(forward_backward(reference), device)
    times["compile_fwd_bwd"] = median_us(forward_backward(compiled), device)
    moved = sum(t.numel() * t.element_size() for t in inputs.values() if isinstance(t, Tensor))
    moved += sum(t.numel() * t.element_size() for t in outputs(op(**inputs)))
    return {
        "size": size,
        **{f"{k}_us": round(v, 3) for k, v in times.items()},
        "op_GBps": round(moved / times["op"] / 1e3, 1),
        "speedup_vs_eager": round(times["eager"] / times["op"], 3),
        "speedup_vs_compile": round(times["compile"] / times["op"], 3),
    }


def device_name(device: str) -> str:
    return torch.cuda.get_device_name() if device == "cuda" else "cpu"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtype", choices=list(DTYPES), default=next(iter(DTYPES)))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sizes", nargs="+", type=int, metavar="N",
                        help="make_inputs sizes (default: DEFAULT_SIZES on CUDA, 4096 on the CPU)")
    parser.add_argument("--json", metavar="FILE", help="also write the results to FILE")
    args = parser.parse_args()
    device = torch.device(args.device).type
    sizes = args.sizes or (DEFAULT_SIZES if device == "cuda" else [4096])
    results = []
    print(f"embedding_bag {args.dtype} on {device_name(device)}, torch {torch.__version__}")
    print(f"{'size':>10} {'op us':>10} {'eager us':>10} {'compile us':>10} {'op GB/s':>9} "
          f"{'x eager':>8} {'x compile':>9}")
    for size in sizes:
        row = bench_size(size, DTYPES[args.dtype], device)
        results.append(row)
        print(f"{size:>10} {row['op_us']:>10.2f} {row['eager_us']:>10.2f} "
              f"{row['compile_us']:>10.2f} {row['op_GBps']:>9.1f} {row['speedup_vs_eager']:>8.2f} "
              f"{row['speedup_vs_compile']:>9.2f}"
              f"   fwd+bwd {row['op_fwd_bwd_us']:.2f} us, eager {row['eager_fwd_bwd_us']:.2f}, "
              f"compile {row['compile_fwd_bwd_us']:.2f}",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"op": "embedding_bag", "dtype": args.dtype, "device": device_name(device),
                       "torch": torch.__version__, "cuda": torch.version.cuda,
                       "date": datetime.date.today().isoformat(), "rows": results}, f, indent=2)


if __name__ == "__main__":
    main()
