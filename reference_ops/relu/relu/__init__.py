"""relu: a custom PyTorch operator with CPU and CUDA kernels.

    from relu import relu

With RELU_JIT=1 the import compiles csrc/ itself (see _jit.py) instead of loading the library that
`pip install --no-build-isolation -e .` built. WITH_CUDA says whether the library has CUDA kernels,
DEBUG_BUILD whether it is a debug build (RELU_DEBUG=1).
"""

# torch first: it loads libc10 and libtorch, which the compiled library links against.
# Importing _C before torch fails with "libc10.so: cannot open shared object file".
import torch  # noqa: F401

from . import _jit, _toolchain

if _jit.enabled():
    WITH_CUDA = _jit.load()
    DEBUG_BUILD = _toolchain.debug_build()
else:
    from ._build_check import check_build

    # A build made against another torch would crash with "undefined symbol" when _C
    # loads; this raises an ImportError that says how to rebuild instead.
    check_build()

    # Loading _C, the library, registers torch.ops.relu.
    from . import _C, _build_info  # noqa: F401

    WITH_CUDA = _build_info.WITH_CUDA
    # A debug build (RELU_DEBUG=1, see _toolchain.py); a _build_info.py without DEBUG was written
    # before it was recorded, by a release build.
    DEBUG_BUILD = getattr(_build_info, "DEBUG", False)

from .relu import relu  # noqa: E402

__all__ = [
    "relu",
    "WITH_CUDA",
    "DEBUG_BUILD",
]
