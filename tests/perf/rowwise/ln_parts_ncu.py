"""One forward each of softmax, rms_norm, LayerNorm without weight and bias (lnx's
ln_noaffine) and layer_norm at bf16 4096 x 4096, for Nsight Compute (NOTES.md, "LayerNorm's
forward, taken apart"):

    R=reference_ops; PYTHONPATH=$R/softmax:$R/rms_norm:$R/layer_norm:tests/perf/rowwise/build/lnx \
      ncu --clock-control none -k regex:row_kernel --metrics ... python tests/perf/rowwise/ln_parts_ncu.py
"""

import torch
from layer_norm import layer_norm
from lnx import ln_noaffine
from rms_norm import rms_norm
from softmax import softmax

x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
for name, op, args in [
    ("softmax", softmax, (x,)),
    ("rms_norm", rms_norm, (x, w)),
    ("ln_noaffine", ln_noaffine, (x,)),
    ("layer_norm", layer_norm, (x, w, b)),
]:
    print("op", name, flush=True)
    op(*args)
    torch.cuda.synchronize()
