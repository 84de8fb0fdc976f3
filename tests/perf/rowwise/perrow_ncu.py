"""One forward of reference_ops/layer_norm and one of the perrow project's ln_stats (a
LayerNorm that also returns mean and rstd), bf16 4096 x 16384, for Nsight Compute:

    PYTHONPATH=reference_ops/layer_norm ncu --clock-control none -k regex:row_kernel \
        --metrics ... python tests/perf/rowwise/perrow_ncu.py
"""

import torch
from layer_norm import layer_norm
from perrow import ln_stats

try:  # a variant build of the same op (another package), where one is installed
    from perrowb import ln_stats as ln_stats_b
except ImportError:
    ln_stats_b = None

x = torch.randn(4096, 16384, device="cuda", dtype=torch.bfloat16)
w = torch.randn(16384, device="cuda", dtype=torch.bfloat16)
b = torch.randn(16384, device="cuda", dtype=torch.bfloat16)
for _ in range(2):
    layer_norm(x, w, b)
    ln_stats(x, w, b)
    if ln_stats_b is not None:
        ln_stats_b(x, w, b)
torch.cuda.synchronize()
