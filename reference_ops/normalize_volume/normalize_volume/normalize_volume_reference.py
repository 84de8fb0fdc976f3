"""normalize_volume written with PyTorch operations: what the kernels must compute.

The tests evaluate it in float64 as the ground truth, and the benchmark times it in eager mode and
under torch.compile as the baselines. Keep it in step with csrc/normalize_volume_math.h.
"""

from torch import Tensor


def reference(vol: Tensor, max_val: float) -> Tensor:
    return vol / max_val
