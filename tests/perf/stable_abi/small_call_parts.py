"""Where a small call's time goes on each ABI: fused_axpby built on torch's ABI and on the
stable ABI, called in several ways on tiny tensors (the CPU side of the call is all there
is), each way back to back, the ways in turn, medians of the rounds.

    python tests/perf/stable_abi/small_call_parts.py [--device cuda] [--kernel-op NAME]

--kernel-op names a second op of the stable package registered with the same kernels and
no autograd kernel (an experiment: the dispatcher's C++ autograd fallback in place of
Python's below-autograd guard).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time

import torch


def per_call_us(fn, calls: int, device: str) -> float:
    if device == "cuda":
        torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(calls):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - began) * 1e6 / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--kernel-op")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    torch_api = importlib.import_module("fused_axpby.fused_axpby")
    stable_api = importlib.import_module("fused_axpby_stable.fused_axpby")
    x, b = (torch.randn(1024, device=args.device) for _ in range(2))
    below = torch._C._AutoDispatchBelowAutograd

    def stable_below_autograd():
        with below():
            return stable_api._forward(0.75, x, b)

    ways = {
        "eager a * x + b": lambda: 0.75 * x + b,
        "torch.empty_like(x)": lambda: torch.empty_like(x),
        "torch ABI: package function": lambda: torch_api.fused_axpby(0.75, x, b),
        "torch ABI: the op (C++ autograd kernel)": lambda: torch_api._forward(0.75, x, b),
        "stable ABI: package function": lambda: stable_api.fused_axpby(0.75, x, b),
        "stable ABI: the op (Python autograd kernel)": lambda: stable_api._forward(0.75, x, b),
        "stable ABI: the op below autograd (guard in Python)": stable_below_autograd,
    }
    if args.kernel_op:
        kernel_op = getattr(torch.ops.fused_axpby_stable, args.kernel_op).default
        ways["stable ABI: second op, no autograd kernel"] = lambda: kernel_op(0.75, x, b)
    for fn in ways.values():
        per_call_us(fn, 500, args.device)
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, fn in ways.items():
            times[name].append(per_call_us(fn, args.calls, args.device))
    where = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"{where}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}, 1024 float32 elements on "
          f"{args.device}; us per call, median of {args.rounds} rounds of {args.calls} calls")
    for name, values in times.items():
        print(f"{statistics.median(values):8.2f}  {name}")


if __name__ == "__main__":
    main()
