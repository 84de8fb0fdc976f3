"""e_pw written with PyTorch operations: what the kernels must compute.

The tests evaluate it in float64 as the ground truth, and the benchmark times it in eager mode and
under torch.compile as the baselines. Keep it in step with csrc/e_pw_math.h.
"""

import torch
from torch import Tensor


def reference(x: Tensor) -> Tensor:
    return torch.pow(x * x + 1, 0.5)
