"""What a small call costs on each ABI: the same op built on torch's ABI and on the stable
ABI, called back to back on CUDA tensors too small for the GPU to matter (the CPU side of
the call is the limit: Python, dispatch, checks, allocation, launch).

    python tests/perf/stable_abi/small_calls.py --torch-package fused_axpby \
        --stable-package fused_axpby_stable --op fused_axpby

Each round times `--calls` calls of one build back to back (wall clock, synchronized at
both ends), the two builds in turn, and prints the medians over the rounds of one call's
time: a forward without autograd, and a forward whose input requires grad.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import statistics
import time

import torch


def per_call_us(fn, calls: int) -> float:
    torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - began) * 1e6 / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--torch-package", required=True)
    parser.add_argument("--stable-package", required=True)
    parser.add_argument("--op", required=True)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    builds = {
        "torch ABI": getattr(importlib.import_module(args.torch_package), args.op),
        "stable ABI": getattr(importlib.import_module(args.stable_package), args.op),
    }
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}; "
          f"median of {args.rounds} rounds of {args.calls} calls, us per call")
    print("| dtype | elements | case | torch ABI | stable ABI | stable / torch |")
    print("| --- | --- | --- | --- | --- | --- |")
    for dtype in (torch.float32, torch.bfloat16):
        for log2 in (10, 16):
            x, b = (torch.randn(1 << log2, device="cuda", dtype=dtype) for _ in range(2))
            x_grad = x.clone().requires_grad_()
            cases = {"forward": (x, b), "forward, x requires grad": (x_grad, b)}
            for case, (first, second) in cases.items():
                calls = {name: functools.partial(op, 0.75, first, second) for name, op in builds.items()}
                times: dict[str, list[float]] = {name: [] for name in builds}
                for call in calls.values():
                    per_call_us(call, 200)  # warm-up
                for _ in range(args.rounds):
                    for name, call in calls.items():
                        times[name].append(per_call_us(call, args.calls))
                t, s = (statistics.median(times[name]) for name in builds)
                print(f"| {str(dtype).removeprefix('torch.')} | 2^{log2} | {case} | {t:.2f} | {s:.2f} | "
                      f"{s / t:.3f} |", flush=True)


if __name__ == "__main__":
    main()
