"""One bf16 4096 x 4096 forward of layer_norm as built in PYTHONPATH, for Nsight Compute:
the looped kernel (RK_STREAM, plan_variants.py's PLANX_STREAM build) against
looped_probe.cu's kernel of the same layout (run_looped_ncu.sh)."""

import torch
from layer_norm import layer_norm

x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
layer_norm(x, w, b)
torch.cuda.synchronize()
