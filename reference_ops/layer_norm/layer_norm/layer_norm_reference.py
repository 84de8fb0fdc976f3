"""layer_norm written with PyTorch operations: what the kernels must compute.

The tests evaluate it in float64 as the ground truth, and the benchmark times it in eager mode and
under torch.compile as the baselines. Keep it in step with csrc/layer_norm_math.h.
"""

import torch
from torch import Tensor


def reference(x: Tensor, weight: Tensor, bias: Tensor, eps: float) -> Tensor:
    return torch.nn.functional.layer_norm(x, [x.shape[-1]], weight, bias, eps)
