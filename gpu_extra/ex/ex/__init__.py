"""ex: a custom PyTorch operator with CPU and CUDA kernels.

    from ex import e_exp, e_tanh, e_sq, e_rs, e_lg, e_pw

With EX_JIT=1 the import compiles csrc/ itself (see _jit.py) instead of loading the library that
`pip install --no-build-isolation -e .` built. WITH_CUDA says whether the library has CUDA kernels,
DEBUG_BUILD whether it is a debug build (EX_DEBUG=1).
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

    # Loading _C, the library, registers torch.ops.ex.
    from . import _C, _build_info  # noqa: F401

    WITH_CUDA = _build_info.WITH_CUDA
    # A debug build (EX_DEBUG=1, see _toolchain.py); a _build_info.py without DEBUG was written
    # before it was recorded, by a release build.
    DEBUG_BUILD = getattr(_build_info, "DEBUG", False)

from .e_exp import e_exp  # noqa: E402
from .e_lg import e_lg  # noqa: E402
from .e_pw import e_pw  # noqa: E402
from .e_rs import e_rs  # noqa: E402
from .e_sq import e_sq  # noqa: E402
from .e_tanh import e_tanh  # noqa: E402

__all__ = [
    "e_exp",
    "e_lg",
    "e_pw",
    "e_rs",
    "e_sq",
    "e_tanh",
    "WITH_CUDA",
    "DEBUG_BUILD",
]
