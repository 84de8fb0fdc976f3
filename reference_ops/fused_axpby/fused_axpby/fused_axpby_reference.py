"""fused_axpby written with PyTorch operations: what the kernels must compute.

The tests evaluate it in float64 as the ground truth, and the benchmark times it in eager mode and
under torch.compile as the baselines. Keep it in step with csrc/fused_axpby_math.h.
"""

from torch import Tensor


def reference(a: float, x: Tensor, b: Tensor) -> Tensor:
    return a * x + b
