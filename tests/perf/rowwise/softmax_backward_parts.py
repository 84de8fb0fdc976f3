"""Softmax's forward and backward timed apart, ours beside Liger-Kernel's: where issue 14's last
softmax gap (bfloat16 4096 x 16384 forward + backward, ours 172.2 against Liger's 170.5 µs on
an H200, generated_softmax_noloop.json) lies, and which layout closes it.

    PYTHONPATH=<a softmax build>:/tmp/site python tests/perf/rowwise/softmax_backward_parts.py --liger

With a build of plan_variants.py (its RK_PLAN override), RK_PLAN="tpr,vpt[,ring slots]" forces a
layout on the forward and the backward alike; run one process a plan, LABEL naming it. Each line: µs, medians
of triton's do_bench with the L2 cleared (bench_rowwise.bench); `mul` is torch.mul(a, b,
out=c), the backward's traffic (two row reads, one row write) at eager's bandwidth; fwd+bwd
a CUDA graph of torch.autograd.grad, as bench_generated.py times it. The backward's gradient
is checked against float64's.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rowwise import bench, graphed  # noqa: E402

SHAPES = [(4096, 16384), (4096, 4096), (32768, 4096)]
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}
# PARTS_SHAPES="4096x16384,4096x4096" and PARTS_DTYPES="bf16" narrow a run.
if os.environ.get("PARTS_SHAPES"):
    SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ["PARTS_SHAPES"].split(",")]
if os.environ.get("PARTS_DTYPES"):
    DTYPES = {d: DTYPES[d] for d in os.environ["PARTS_DTYPES"].split(",")}


def ours():
    from softmax import softmax

    backward = torch.ops.softmax.softmax_backward.default
    return softmax, backward


def liger():
    from liger_kernel.ops.softmax import _softmax_backward
    from liger_kernel.ops.utils import calculate_settings
    from liger_kernel.transformers.functional import liger_softmax

    # Liger's block size and warps for a row length, worked out once, outside the timed calls.
    settings = functools.cache(calculate_settings)

    def backward(g, y):
        n = y.shape[-1]
        block, warps = settings(n)
        return _softmax_backward(g, y, block, warps, n > block)

    return liger_softmax, backward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--liger", action="store_true", help="time Liger-Kernel's too")
    args = parser.parse_args()
    impls = {"ours": ours()}
    if args.liger:
        impls["liger"] = liger()
    plan = os.environ.get("LABEL") or os.environ.get("RK_PLAN", "default")
    for dname, dtype in DTYPES.items():
        for rows, n in SHAPES:
            x = torch.randn(rows, n, device="cuda", dtype=dtype)
            g = torch.randn_like(x)
            dst = torch.empty_like(x)
            copy = bench(lambda: dst.copy_(x))  # noqa: B023
            mul = bench(lambda: torch.mul(x, g, out=dst))  # noqa: B023
            line = [f"{dname} {rows}x{n} copy {copy:6.1f} mul {mul:6.1f}"]
            for name, (forward, backward) in impls.items():
                with torch.no_grad():
                    y = forward(x)
                    fwd = bench(lambda: forward(x))  # noqa: B023
                    bwd = bench(lambda: backward(g, y))  # noqa: B023
                    y64 = x.double().softmax(-1)
                    want = y64 * (g.double() - (g.double() * y64).sum(-1, keepdim=True))
                    err = float((backward(g, y).double() - want).norm() / want.norm())
                leaf = x.detach().requires_grad_(True)
                replay, _keep = graphed(lambda: torch.autograd.grad(forward(leaf), [leaf], [g]))  # noqa: B023
                both = bench(replay)
                line.append(f"{name}[{plan if name == 'ours' else '-'}] fwd {fwd:6.1f} bwd {bwd:6.1f} "
                            f"fwd+bwd {both:6.1f} (bwd/mul {mul / bwd:.3f}, rel err {err:.1e})")
            print(" | ".join(line), flush=True)


if __name__ == "__main__":
    main()
