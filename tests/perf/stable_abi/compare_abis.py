"""One op built on torch's own ABI and on the stable ABI, timed side by side in one process.

    python tests/perf/stable_abi/compare_abis.py --torch-package fused_axpby \
        --stable-package fused_axpby_stable --op fused_axpby --json out.json

Both packages hold the same op (rendered by opgen with --abi torch and --abi stable). For
each size and dtype: the median time of a forward call without autograd (one call alone:
what a small call costs, dispatch and Python included; ten back to back from 2^24 on), of a
forward whose input requires grad, and of forward + backward (torch.autograd.grad), for
both builds and for eager PyTorch, timed with CUDA events as the generated benchmarks do.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import time

import torch

TOLERANCES = {torch.float32: {"rtol": 1e-5, "atol": 1e-5}, torch.bfloat16: {"rtol": 1.6e-2, "atol": 1e-2}}


def median_us(fn, calls: int, min_seconds: float = 0.3, min_reps: int = 20) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    started = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - started < min_seconds:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) * 1000 / calls)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--torch-package", required=True)
    parser.add_argument("--stable-package", required=True)
    parser.add_argument("--op", required=True)
    parser.add_argument("--json")
    args = parser.parse_args()
    ops = {
        "torch ABI": getattr(importlib.import_module(args.torch_package), args.op),
        "stable ABI": getattr(importlib.import_module(args.stable_package), args.op),
    }
    eager = importlib.import_module(f"{args.torch_package}.{args.op}_reference").reference
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for log2 in (16, 20, 24, 28):
            n = 1 << log2
            calls = 1 if log2 <= 20 else 10
            x = torch.randn(n, device="cuda", dtype=dtype)
            b = torch.randn(n, device="cuda", dtype=dtype)
            xg = x.clone().requires_grad_()
            for name, fn in [*ops.items(), ("eager", eager)]:
                # Every build must agree with the float64 reference before it is timed (eager
                # rounds a * x before adding b: within the dtype's tolerance too).
                expected = eager(a=0.75, x=x.double(), b=b.double())
                torch.testing.assert_close(fn(a=0.75, x=x, b=b).double(), expected,
                                           **TOLERANCES[dtype])
                row = {
                    "dtype": str(dtype).removeprefix("torch."), "elements": f"2^{log2}", "build": name,
                    "forward": median_us(lambda fn=fn, x=x, b=b: fn(a=0.75, x=x, b=b), calls),
                    "forward, x requires grad": median_us(
                        lambda fn=fn, xg=xg, b=b: fn(a=0.75, x=xg, b=b), calls),
                    "forward + backward": median_us(
                        lambda fn=fn, x=x, xg=xg, b=b: torch.autograd.grad(fn(a=0.75, x=xg, b=b), xg, x),
                        calls),
                }
                rows.append(row)
                print(" | ".join(f"{v:.1f}" if isinstance(v, float) else v for v in row.values()),
                      flush=True)
            del x, b, xg
    device = torch.cuda.get_device_name()
    header = (f"{device}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}; medians in us; "
              "ratio = stable ABI / torch ABI")
    print("\n" + header)
    print("| dtype | elements | forward torch / stable / eager | ratio | requires grad torch / stable "
          "| ratio | fwd+bwd torch / stable / eager | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for i in range(0, len(rows), 3):
        t, s, e = rows[i: i + 3]
        cells = [t["dtype"], t["elements"]]
        for key, with_eager in (("forward", True), ("forward, x requires grad", False),
                                ("forward + backward", True)):
            values = [t[key], s[key]] + ([e[key]] if with_eager else [])
            cells += [" / ".join(f"{v:.1f}" for v in values), f"{s[key] / t[key]:.2f}"]
        print("| " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"device": device, "torch": torch.__version__, "rows": rows}, file, indent=1)


if __name__ == "__main__":
    main()
