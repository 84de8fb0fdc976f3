"""embedding_bag: a custom PyTorch operator with CPU and CUDA kernels.

    from embedding_bag import embedding_bag

With EMBEDDING_BAG_JIT=1 the import compiles csrc/ itself (see _jit.py) instead of loading
the library that `pip install --no-build-isolation -e .` built.
"""

# torch first: it loads libc10 and libtorch, which the compiled library links against.
# Importing _C before torch fails with "libc10.so: cannot open shared object file".
import torch  # noqa: F401

from . import _jit

if _jit.enabled():
    WITH_CUDA = _jit.load()
else:
    from ._build_check import check_build

    # A build made against another torch would crash with "undefined symbol" when _C
    # loads; this raises an ImportError that says how to rebuild instead.
    check_build()

    from . import _C  # noqa: F401  loading the library registers torch.ops.embedding_bag
    from ._build_info import WITH_CUDA

from .embedding_bag import embedding_bag  # noqa: E402

__all__ = [
    "embedding_bag",
    "WITH_CUDA",
]
