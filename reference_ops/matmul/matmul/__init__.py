"""matmul: a custom PyTorch operator with CPU and CUDA kernels.

    from matmul import matmul
"""

# torch first: it loads libc10 and libtorch, which the compiled library links against.
# Importing _C before torch fails with "libc10.so: cannot open shared object file".
import torch  # noqa: F401

from ._build_check import check_build

# A build made against another torch would crash with "undefined symbol" when _C loads;
# this raises an ImportError that says how to rebuild instead.
check_build()

from . import _C  # noqa: E402, F401  loading the library registers torch.ops.matmul
from .ops import matmul  # noqa: E402

__all__ = ["matmul"]
