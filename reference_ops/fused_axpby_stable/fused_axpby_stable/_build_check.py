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
    # Built on the stable ABI: any torch from the targeted version on loads it.
    target = getattr(_build_info, "STABLE_TARGET", None)
    if target is not None:
        if torch.torch_version.TorchVersion(torch.__version__) < target:
            wanted = ".".join(map(str, target))
            raise ImportError(
                f"{__package__} is built on the stable ABI of torch >= {wanted} but torch "
                f"{torch.__version__} is installed; pip install 'torch>={wanted}'"
            )
        # Its CUDA kernels link torch's CUDA libraries (any CUDA version: the CUDA runtime is
        # linked in), which a CPU-only torch does not have.
        if _build_info.WITH_CUDA and torch.version.cuda is None:
            raise ImportError(
                f"{__package__} is built with CUDA kernels but torch {torch.__version__} "
                "has no CUDA; install a CUDA build of torch, or rebuild for the CPU only: "
                "USE_CUDA=0 pip install --no-build-isolation -e ."
            )
        return
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
