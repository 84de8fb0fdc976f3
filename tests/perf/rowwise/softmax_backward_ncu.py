"""Softmax's backward at bfloat16 4096 x 16384, ours, Liger-Kernel's and torch.mul (the same
traffic: two row reads and one row write), each launched twice, for Nsight Compute
(NOTES.md, "Softmax's bf16 backward at 16384 columns"):

    PYTHONPATH=<a softmax build>:/tmp/site ncu --clock-control none \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis -k regex:'row_kernel|backward|mul' \
      python tests/perf/rowwise/softmax_backward_ncu.py
"""

import torch
from liger_kernel.ops.softmax import _softmax_backward
from liger_kernel.ops.utils import calculate_settings
from softmax import softmax

x = torch.randn(4096, 16384, device="cuda", dtype=torch.bfloat16)
g = torch.randn_like(x)
y = softmax(x)
out = torch.empty_like(x)
block, warps = calculate_settings(x.shape[-1])
for name, call in [
    ("ours", lambda: torch.ops.softmax.softmax_backward.default(g, y)),
    ("liger", lambda: _softmax_backward(g, y, block, warps, False)),
    ("mul", lambda: torch.mul(g, y, out=out)),
]:
    for _ in range(2):
        print("call", name, flush=True)
        call()
        torch.cuda.synchronize()
