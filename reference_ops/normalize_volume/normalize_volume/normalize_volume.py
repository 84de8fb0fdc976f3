"""The Python API of normalize_volume: a typed wrapper and fake kernels for tracing.

The kernels are registered in C++ as torch.ops.normalize_volume.normalize_volume, in csrc/normalize_volume.cpp.
This module adds what torch.compile needs on top of them.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["normalize_volume"]

SUPPORTED_DTYPES = (torch.uint16, )

# Looked up once: attribute access on torch.ops costs microseconds per call.
_forward = torch.ops.normalize_volume.normalize_volume.default


def normalize_volume(vol: Tensor, max_val: float) -> Tensor:
    """Elementwise `vol / max_val`, in one kernel.

    Computed in float64 where the input or the output is float64, else in float32.

    Args:
        vol: a tensor of uint16, on the CPU or a CUDA device.
        max_val: a float.

    Returns:
        A new contiguous tensor on vol's device, of torch.float32, with the
        shape of vol.
    """
    return _forward(vol, max_val)


def _check_tensors(op: str, /, **tensors: Tensor) -> None:
    """The checks of check_tensors in csrc/normalize_volume.cpp, for tensors without data."""
    first_name, first = next(iter(tensors.items()))
    for name, t in tensors.items():
        torch._check(
            t.dtype in SUPPORTED_DTYPES,
            lambda name=name, t=t: f"{op}: {name} has dtype {t.dtype}; supported dtypes are "
            + ", ".join(str(d) for d in SUPPORTED_DTYPES),
        )
        torch._check(
            t.dtype == first.dtype,
            lambda name=name, t=t: (
                f"{op}: {name} has dtype {t.dtype} but {first_name} has dtype {first.dtype}"
            ),
        )
        torch._check(
            t.device == first.device,
            lambda name=name, t=t: (
                f"{op}: {name} is on {t.device} but {first_name} is on {first.device}"
            ),
        )
        torch._check(
            t.shape == first.shape,
            lambda name=name, t=t: (
                f"{op}: {name} has shape {list(t.shape)} but {first_name} has shape "
                f"{list(first.shape)}"
            ),
        )


# Fake kernels: the output's metadata, computed without data, so that torch.compile and
# torch.export can trace through the op. They must agree with the C++ kernels, which
# return new contiguous tensors.
@torch.library.register_fake("normalize_volume::normalize_volume")
def _(vol, max_val):
    _check_tensors("normalize_volume", vol=vol)
    shape = vol.shape
    return vol.new_empty(shape, dtype=torch.float32)
