"""One op built on torch's own ABI and on the stable ABI, timed side by side in one process.

    python tests/perf/stable_abi/compare_abis.py --torch-package fused_axpby \
        --stable-package fused_axpby_stable --op fused_axpby --json out.json
    python tests/perf/stable_abi/compare_abis.py --torch-package matmul \
        --stable-package matmul_stable --op matmul

Both packages hold the same op (rendered by opgen with --abi torch and --abi stable). For
each size and dtype: the median time of a forward call without autograd (one call alone at
small sizes: what a small call costs, dispatch and Python included; several back to back at
large ones), of a forward whose inputs require grad, and of forward + backward
(torch.autograd.grad), for both builds and for eager PyTorch, timed with CUDA events as the
generated benchmarks do.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import time

import torch

# Against float64 (eager rounds a * x before adding b; a product sums in another order).
TOLERANCES = {torch.float32: {"rtol": 1e-4, "atol": 1e-3}, torch.bfloat16: {"rtol": 1.6e-2, "atol": 5e-2}}


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


# What each op is timed on: its arguments at each size, and which of them get gradients.
def axpby_inputs(log2: int, dtype: torch.dtype) -> tuple[dict, list[str]]:
    n = 1 << log2
    x, b = (torch.randn(n, device="cuda", dtype=dtype) for _ in range(2))
    return {"a": 0.75, "x": x, "b": b}, ["x"]


def matmul_inputs(size: int, dtype: torch.dtype) -> tuple[dict, list[str]]:
    a, b = (torch.randn(size, size, device="cuda", dtype=dtype) for _ in range(2))
    return {"a": a, "b": b}, ["a", "b"]


CASES = {
    "fused_axpby": (axpby_inputs, (16, 20, 24, 28), "2^{}", lambda size: 1 if size <= 20 else 10),
    "matmul": (matmul_inputs, (128, 512, 2048, 4096), "{0}x{0}", lambda size: 1 if size <= 512 else 3),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--torch-package", required=True)
    parser.add_argument("--stable-package", required=True)
    parser.add_argument("--op", required=True, choices=CASES)
    parser.add_argument("--json")
    args = parser.parse_args()
    ops = {
        "torch ABI": getattr(importlib.import_module(args.torch_package), args.op),
        "stable ABI": getattr(importlib.import_module(args.stable_package), args.op),
    }
    eager = importlib.import_module(f"{args.torch_package}.{args.op}_reference").reference
    make_inputs, sizes, size_name, calls_at = CASES[args.op]
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for size in sizes:
            inputs, grad_names = make_inputs(size, dtype)
            with_grad = {k: v.clone().requires_grad_() if k in grad_names else v for k, v in inputs.items()}
            wrt = [with_grad[k] for k in grad_names]
            calls = calls_at(size)
            for name, fn in [*ops.items(), ("eager", eager)]:
                # Every build must agree with the float64 reference before it is timed.
                expected = eager(**{k: v.double() if torch.is_tensor(v) else v for k, v in inputs.items()})
                torch.testing.assert_close(fn(**inputs).double(), expected, **TOLERANCES[dtype])
                out = fn(**inputs)
                row = {
                    "dtype": str(dtype).removeprefix("torch."), "size": size_name.format(size), "build": name,
                    "forward": median_us(lambda fn=fn, inputs=inputs: fn(**inputs), calls),
                    "forward, inputs require grad": median_us(
                        lambda fn=fn, with_grad=with_grad: fn(**with_grad), calls),
                    "forward + backward": median_us(
                        lambda fn=fn, with_grad=with_grad, wrt=wrt, out=out:
                        torch.autograd.grad(fn(**with_grad), wrt, out), calls),
                }
                rows.append(row)
                print(" | ".join(f"{v:.1f}" if isinstance(v, float) else v for v in row.values()),
                      flush=True)
            del inputs, with_grad, wrt
    device = torch.cuda.get_device_name()
    header = (f"{args.op}: {device}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}; medians in us; "
              "ratio = stable ABI / torch ABI")
    print("\n" + header)
    print("| dtype | size | forward torch / stable / eager | ratio | requires grad torch / stable "
          "| ratio | fwd+bwd torch / stable / eager | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for i in range(0, len(rows), 3):
        t, s, e = rows[i: i + 3]
        cells = [t["dtype"], t["size"]]
        for key, with_eager in (("forward", True), ("forward, inputs require grad", False),
                                ("forward + backward", True)):
            values = [t[key], s[key]] + ([e[key]] if with_eager else [])
            cells += [" / ".join(f"{v:.1f}" for v in values), f"{s[key] / t[key]:.2f}"]
        print("| " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"op": args.op, "device": device, "torch": torch.__version__, "rows": rows}, file,
                      indent=1)


if __name__ == "__main__":
    main()
