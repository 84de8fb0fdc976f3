"""The Python API of layer_norm: a typed wrapper and fake kernels for tracing.

The kernels are registered in C++ as torch.ops.layer_norm.layer_norm, in csrc/layer_norm.cpp.
Autograd is registered in C++ too, in csrc/layer_norm_autograd.cpp. This module adds what
torch.compile needs on top of them.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["layer_norm"]

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _library_op(name: str):
    """torch.ops.layer_norm.<name>, the op of that name that the library registers: looked up once,
    since attribute access on torch.ops costs microseconds per call."""
    return getattr(torch.ops.layer_norm, name).default


def _cpp_operator(op):
    """The C++ operator behind an op of torch.ops. Outside torch.compile the API calls it directly,
    past the Python layer of OpOverload.__call__ (about 0.4 µs of a 2 µs call on a CPU);
    torch.compile cannot trace it, so it traces the op itself."""
    return getattr(op, "_op", op)


_forward = _library_op("layer_norm")
_forward_eager = _cpp_operator(_forward)
# Dynamo traces the op itself, since it cannot trace the C++ operator; every other tracer
# (make_fx, non-strict torch.export) reaches the op through the C++ operator as it is.
# is_dynamo_compiling is one Python call where is_compiling takes two (65 ns of a 0.9 µs call).
_is_dynamo_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-05) -> Tensor:
    """Per row (the last dimension) of x: `mu = mean(x)`; `var = mean((x - mu) * (x - mu))`;
    then each element is `(x - mu) * rsqrt(var + eps) * weight + bias`, in one kernel.

    Computed in float64 for float64 tensors, else in float32.

    Args:
        x: a tensor of float32, float64, float16, bfloat16 with at least one dimension, on
            the CPU or a CUDA device.
        weight: a tensor of shape (n,) for rows of n elements, on x's device,
            with its dtype, or float32 where x is float16 or bfloat16 (a float32
            weight with half-type activations, as under autocast: it is rounded to
            x's dtype for the kernels, and its gradient is float32).
        bias: a tensor of shape (n,) for rows of n elements, on x's device,
            with its dtype, or float32 where x is float16 or bfloat16 (a float32
            weight with half-type activations, as under autocast: it is rounded to
            x's dtype for the kernels, and its gradient is float32).
        eps: a float (default 1e-05).

    Returns:
        A new contiguous tensor with the shape, dtype and device of x.

    Differentiable once with respect to x, weight, bias. Double backward raises.
    """
    if _is_dynamo_tracing():
        return _forward(x, weight, bias, eps)
    return _forward_eager(x, weight, bias, eps)


def _check_arguments(op: str, rows: dict[str, Tensor], columns: dict[str, Tensor]) -> None:
    """The checks of check_arguments in csrc/layer_norm.cpp, for tensors without data."""
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
@torch.library.register_fake("layer_norm::layer_norm")
def _(x, weight, bias, eps=1e-05):
    _check_arguments("layer_norm", {"x": x}, {"weight": weight, "bias": bias})
    return x.new_empty(x.shape)


@torch.library.register_fake("layer_norm::layer_norm_forward_saving_reductions")
def _(x, weight, bias, eps=1e-05):
    _check_arguments("layer_norm", {"x": x}, {"weight": weight, "bias": bias})
    # The output, and the forward's reductions (mu, var) of each row in float32
    # (float64 for float64 rows), which the backward reads.
    reductions = x.new_empty(
        (2, *x.shape[:-1]),
        dtype=torch.float64 if x.dtype == torch.float64 else torch.float32,
    )
    return x.new_empty(x.shape), reductions


@torch.library.register_fake("layer_norm::layer_norm_backward")
def _(grad, x, weight, bias, reductions, eps):
    _check_arguments(
        "layer_norm_backward",
        {"grad": grad, "x": x},
        {"weight": weight, "bias": bias},
    )
    return (
        x.new_empty(x.shape),
        weight.new_empty(weight.shape),
        bias.new_empty(bias.shape),
    )


# Autograd is registered in C++ (csrc/layer_norm_autograd.cpp): the backward is a custom op of its
# own with CPU and CUDA kernels, so it also runs under torch.compile.
