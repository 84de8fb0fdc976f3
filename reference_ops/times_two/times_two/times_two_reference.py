"""times_two written with PyTorch operations: what the kernels must compute.

The tests evaluate it in float64 as the ground truth, and the benchmark times it in eager mode and
under torch.compile as the baselines. Keep it in step with csrc/times_two_math.h.
"""

from torch import Tensor


def reference(x: Tensor) -> Tensor:
    return 2 * x
