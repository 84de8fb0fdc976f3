"""rgb_to_gray written with PyTorch operations: what the kernels must compute.

The tests evaluate it in float64 as the ground truth, and the benchmark times it in eager mode and
under torch.compile as the baselines. Keep it in step with csrc/rgb_to_gray_math.h.
"""

import torch
from torch import Tensor


def reference(img: Tensor) -> Tensor:
    return (0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]).to(torch.uint8)
