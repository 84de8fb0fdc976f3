"""The Python API of softmax: a typed wrapper and fake kernels for tracing.

The kernels are registered in C++ as torch.ops.softmax.softmax, in csrc/softmax.cpp. Autograd is
registered in C++ too, in csrc/softmax_autograd.cpp. This module adds what torch.compile needs on
top of them.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["softmax"]

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _library_op(name: str):
    """torch.ops.softmax.<name>, the op of that name that the library registers: looked up once,
    since attribute access on torch.ops costs microseconds per call."""
    return getattr(torch.ops.softmax, name).default


def _cpp_operator(op):
    """The C++ operator behind an op of torch.ops. Outside torch.compile the API calls it directly,
    past the Python layer of OpOverload.__call__ (about 0.4 µs of a 2 µs call on a CPU);
    torch.compile cannot trace it, so it traces the op itself."""
    return getattr(op, "_op", op)


_forward = _library_op("softmax")
_forward_eager = _cpp_operator(_forward)
# Dynamo traces the op itself, since it cannot trace the C++ operator; every other tracer
# (make_fx, non-strict torch.export) reaches the op through the C++ operator as it is.
# is_dynamo_compiling is one Python call where is_compiling takes two (65 ns of a 0.9 µs call).
_is_dynamo_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


def softmax(x: Tensor) -> Tensor:
    """Per row (the last dimension) of x: `m = max(x)`; `z = sum(exp(x - m))`; then each
    element is `exp(x - m) * (1 / z)`, in one kernel.

    Computed in float64 for float64 tensors, else in float32.

    Args:
        x: a tensor of float32, float64, float16, bfloat16 with at least one dimension, on
            the CPU or a CUDA device.

    Returns:
        A new contiguous tensor with the shape, dtype and device of x.

    Differentiable once with respect to x. Double backward raises.
    """
    if _is_dynamo_tracing():
        return _forward(x)
    return _forward_eager(x)


def _check_arguments(op: str, rows: dict[str, Tensor], columns: dict[str, Tensor]) -> None:
    """The checks of check_arguments in csrc/softmax.cpp, for tensors without data."""
    first_name, first = next(iter(rows.items()))
    torch._check(
        first.dim() >= 1,
        lambda: (
            f"{op}: {first_name} has shape {list(first.shape)}; it needs a dimension of rows, "
            "the last"
        ),
    )
    for name, t in rows.items():
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
                f"{op}: {name} has shape {list(t.shape)} but {first_name} has "
                f"shape {list(first.shape)}"
            ),
        )
    half_rows = first.dtype in (torch.float16, torch.bfloat16)
    for name, t in columns.items():
        torch._check(
            t.dtype == first.dtype or (half_rows and t.dtype == torch.float32),
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
            t.dim() == 1 and t.shape[0] == first.shape[-1],
            lambda name=name, t=t: (
                f"{op}: {name} has shape {list(t.shape)} but the rows of "
                f"{first_name} have {first.shape[-1]} elements"
            ),
        )


# Fake kernels: the output's metadata, computed without data, so that torch.compile and
# torch.export can trace through the op. They must agree with the C++ kernels, which
# return new contiguous tensors.
@torch.library.register_fake("softmax::softmax")
def _(x):
    _check_arguments("softmax", {"x": x}, {})
    return x.new_empty(x.shape)


@torch.library.register_fake("softmax::softmax_backward")
def _(grad, y):
    _check_arguments(
        "softmax_backward",
        {"grad": grad, "y": y},
        {},
    )
    return y.new_empty(y.shape)


# Autograd is registered in C++ (csrc/softmax_autograd.cpp): the backward is a custom op of its own
# with CPU and CUDA kernels, so it also runs under torch.compile.
