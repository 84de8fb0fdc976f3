"""matmul written with PyTorch operations: what the kernels must compute.

The tests evaluate it in float64 as the ground truth, and the benchmark times it in eager mode and
under torch.compile as the baselines. Keep it in step with the kernels in csrc/matmul_kernel.cu.
"""

from torch import Tensor


def reference(a: Tensor, b: Tensor) -> Tensor:
    return a @ b
