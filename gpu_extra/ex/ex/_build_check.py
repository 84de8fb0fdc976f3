"""Check, before the compiled library loads, that it was built against this torch."""

import torch

_REBUILD = "rebuild it in its project directory: pip install --no-build-isolation -e ."


def check_build() -> None:
    """Raise ImportError naming the mismatch and the fix if the build does not match torch.

    setup.py records torch's version and CUDA version in _build_info.py at build time.
    An extension built against one torch and loaded into another fails with undefined
    symbols, or worse, runs with a mismatched ABI.
    """
    try:
        from . import _build_info
    except ImportError:
        raise ImportError(f"{__package__} has not been built; {_REBUILD}") from None
    if _build_info.TORCH_VERSION != torch.__version__:
        raise ImportError(
            f"{__package__} was built against torch {_build_info.TORCH_VERSION} but torch "
            f"{torch.__version__} is installed; {_REBUILD}"
        )
    if _build_info.TORCH_CUDA_VERSION != torch.version.cuda:
        raise ImportError(
            f"{__package__} was built against torch for CUDA {_build_info.TORCH_CUDA_VERSION} "
            f"but this torch is for CUDA {torch.version.cuda}; {_REBUILD}"
        )
