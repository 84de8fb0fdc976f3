"""Does returning per-row outputs cost the forward? A LayerNorm that also returns each row's
mean and rstd (a generated op of a project `perrow`, tests/perf/rowwise/run_perrow.sh) against
reference_ops/layer_norm, built from the same template, in one process.

    PYTHONPATH=reference_ops/layer_norm python tests/perf/rowwise/perrow_ab.py

Forward as bench_rowwise.py times it (triton's do_bench medians, the L2 cleared), as a
fraction of a device copy's bandwidth (the row read once, the rows written once; the per-row
outputs are 2 x 4 bytes a row); fwd+bwd with respect to x, weight and bias as CUDA-graph
replays, µs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from layer_norm import layer_norm
from perrow import ln_stats

try:  # a variant build of the same op (another package), where one is installed
    from perrowb import ln_stats as ln_stats_b
except ImportError:
    ln_stats_b = None

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rowwise import bench, graphed  # noqa: E402

SHAPES = [(4096, 4096), (32768, 4096), (4096, 16384), (8, 131072)]
print(torch.cuda.get_device_name(), torch.__version__)
for dtype in (torch.bfloat16, torch.float32):
    for rows, n in SHAPES:
        x = torch.randn(rows, n, device="cuda", dtype=dtype)
        w = torch.randn(n, device="cuda", dtype=dtype)
        b = torch.randn(n, device="cuda", dtype=dtype)
        dst = torch.empty_like(x)
        copy = bench(lambda: dst.copy_(x))
        line = [f"{str(dtype)[6:]:>8} {rows:>6}x{n:<6} copy {copy:7.1f} us"]
        ops = [("layer_norm", layer_norm), ("ln_stats", lambda *a: ln_stats(*a)[0])]
        if ln_stats_b is not None:
            ops.append(("ln_stats_b", lambda *a: ln_stats_b(*a)[0]))
        for name, op in ops:
            fwd = bench(lambda: op(x, w, b))
            leaves = [t.detach().requires_grad_() for t in (x, w, b)]
            grad = torch.randn_like(x)
            replay, _ = graphed(lambda: torch.autograd.grad(op(*leaves), leaves, grad))
            both = bench(replay)
            line.append(f"{name} fwd {fwd:7.1f} us ({copy / fwd:.2f} of copy) fwd+bwd {both:7.1f}")
        print(" | ".join(line), flush=True)
