"""Where does LayerNorm's bf16 forward lose on an H200? Forms of it beside
reference_ops/layer_norm (a project `lnx` rendered into tests/perf/rowwise/build/lnx, see
NOTES.md "LayerNorm's forward, taken apart"): without bias, with sum and sum of squares in
one stage, RMSNorm with a bias (one stage, two column inputs), and without weight and bias.
Forward medians of triton's do_bench (L2 cleared), fraction of a device copy's bandwidth.

    PYTHONPATH=reference_ops/layer_norm:tests/perf/rowwise/build/lnx python tests/perf/rowwise/ln_parts.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from layer_norm import layer_norm
from lnx import ln_noaffine, ln_nobias, ln_onestage, rms_bias

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rowwise import bench  # noqa: E402

print(torch.cuda.get_device_name(), torch.__version__)
for dtype in (torch.bfloat16, torch.float32):
    for rows, n in [(4096, 4096), (32768, 4096), (4096, 16384)]:
        x = torch.randn(rows, n, device="cuda", dtype=dtype)
        w = torch.randn(n, device="cuda", dtype=dtype)
        b = torch.randn(n, device="cuda", dtype=dtype)
        dst = torch.empty_like(x)
        copy = bench(lambda dst=dst, x=x: dst.copy_(x))
        forms = {  # name: (op, its arguments)
            "layer_norm": (layer_norm, (x, w, b)),
            "no bias": (ln_nobias, (x, w)),
            "one stage": (ln_onestage, (x, w, b)),
            "rms + bias": (rms_bias, (x, w, b)),
            "no w, b": (ln_noaffine, (x,)),
        }
        line = [f"{str(dtype)[6:]:>8} {rows:>6}x{n:<6}"]
        for name, (op, args) in forms.items():
            op(*args)
            line.append(f"{name} {copy / bench(lambda op=op, args=args: op(*args)):.3f}")
        print(" | ".join(line), flush=True)
