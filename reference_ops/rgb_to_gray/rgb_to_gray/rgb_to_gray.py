"""The Python API of rgb_to_gray: a typed wrapper and fake kernels for tracing.

The kernels are registered in C++ as torch.ops.rgb_to_gray.rgb_to_gray, in csrc/rgb_to_gray.cpp.
This module adds what torch.compile needs on top of them.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["rgb_to_gray"]

SUPPORTED_DTYPES = (torch.uint8,)


def _library_op(name: str):
    """torch.ops.rgb_to_gray.<name>, the op of that name that the library registers: looked up once,
    since attribute access on torch.ops costs microseconds per call."""
    return getattr(torch.ops.rgb_to_gray, name).default


def _cpp_operator(op):
    """The C++ operator behind an op of torch.ops. Outside torch.compile the API calls it directly,
    past the Python layer of OpOverload.__call__ (about 0.4 µs of a 2 µs call on a CPU);
    torch.compile cannot trace it, so it traces the op itself."""
    return getattr(op, "_op", op)


_forward = _library_op("rgb_to_gray")
_forward_eager = _cpp_operator(_forward)
# Dynamo traces the op itself, since it cannot trace the C++ operator; every other tracer
# (make_fx, non-strict torch.export) reaches the op through the C++ operator as it is.
# is_dynamo_compiling is one Python call where is_compiling takes two (65 ns of a 0.9 µs call).
_is_dynamo_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


def rgb_to_gray(img: Tensor) -> Tensor:
    """Per pixel, `0.299f * r + 0.587f * g + 0.114f * b` over the channels (r, g, b), in one
    kernel.

    Computed in float64 where the input or the output is float64, else in float32.

    Args:
        img: a tensor of uint8, on the CPU or a CUDA device.

    Returns:
        A new tensor contiguous, on img's device, of img's dtype, with the
        shape of img without its last (channel) dimension.
    """
    if _is_dynamo_tracing():
        return _forward(img)
    return _forward_eager(img)


def _check_tensors(op: str, /, **tensors: Tensor) -> None:
    """The checks of check_tensors in csrc/rgb_to_gray.cpp, for tensors without data."""
    first_name, first = next(iter(tensors.items()))
    for name, t in tensors.items():
        torch._check(
            t.dtype in SUPPORTED_DTYPES,
            lambda name=name, t=t: (
                f"{op}: {name} has dtype {t.dtype}; supported dtypes are "
                + ", ".join(str(d) for d in SUPPORTED_DTYPES)
            ),
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
# torch.export can trace through the op. They must agree with the C++ kernels in shape,
# dtype and strides.
@torch.library.register_fake("rgb_to_gray::rgb_to_gray")
def _(img):
    _check_tensors("rgb_to_gray", img=img)
    torch._check(
        img.dim() >= 1 and img.shape[-1] == 3,
        lambda: (
            f"rgb_to_gray: img has shape {list(img.shape)}; its last dimension must hold the 3 "
            "channels r, g, b"
        ),
    )
    shape = img.shape[:-1]
    return img.new_empty(shape)
