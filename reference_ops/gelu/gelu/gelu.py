"""The Python API of gelu: a typed wrapper and fake kernels for tracing.

The kernels are registered in C++ as torch.ops.gelu.gelu, in csrc/gelu.cpp. Autograd is registered
in C++ too, in csrc/gelu_autograd.cpp. This module adds what torch.compile needs on top of them.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["gelu"]

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _library_op(name: str):
    """torch.ops.gelu.<name>, the op of that name that the library registers: looked up once, since
    attribute access on torch.ops costs microseconds per call."""
    return getattr(torch.ops.gelu, name).default


def _cpp_operator(op):
    """The C++ operator behind an op of torch.ops. Outside torch.compile the API calls it directly,
    past the Python layer of OpOverload.__call__ (about 0.4 µs of a 2 µs call on a CPU);
    torch.compile cannot trace it, so it traces the op itself."""
    return getattr(op, "_op", op)


_forward = _library_op("gelu")
_forward_eager = _cpp_operator(_forward)
# Dynamo traces the op itself, since it cannot trace the C++ operator; every other tracer
# (make_fx, non-strict torch.export) reaches the op through the C++ operator as it is.
# is_dynamo_compiling is one Python call where is_compiling takes two (65 ns of a 0.9 µs call).
_is_dynamo_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


def gelu(x: Tensor) -> Tensor:
    """Elementwise `0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))`, in
    one kernel.

    Computed in float64 where the input or the output is float64, else in float32.

    Args:
        x: a tensor of float32, float64, float16, bfloat16, on the CPU or a CUDA device.

    Returns:
        A new tensor in the layout of the tensors where they share a dense one (channels_last,
        transposed alike), else contiguous, on x's device, of x's dtype, with the
        shape of x.

    Differentiable once with respect to x. Double backward raises.
    """
    if _is_dynamo_tracing():
        return _forward(x)
    return _forward_eager(x)


def _check_tensors(op: str, /, **tensors: Tensor) -> None:
    """The checks of check_tensors in csrc/gelu.cpp, for tensors without data."""
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


# The layout rule of the C++ kernels (csrc/gelu.cpp), for the fake kernels: tensors that are all
# dense (no gaps, no overlap, as ATen's is_non_overlapping_and_dense) with the same strides give
# results in their layout; None (a one-value gradient) does not count.
def _is_dense(t: Tensor) -> bool:
    if t.dim() == 1:
        return t.shape[0] < 2 or t.stride(0) == 1
    expected = 1
    dims = [(size, stride) for size, stride in zip(t.shape, t.stride(), strict=True) if size >= 2]
    for size, stride in sorted(dims, key=lambda dim: dim[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def _shared_dense_layout(*tensors: Tensor | None) -> Tensor | None:
    present = [t for t in tensors if t is not None]
    if not present or not all(_is_dense(t) and t.stride() == present[0].stride() for t in present):
        return None
    return present[0]


def _is_one_value(t: Tensor) -> bool:
    """A gradient of one value expanded to a shape (stride 0), as sum() sends back."""
    sizes_and_strides = zip(t.shape, t.stride(), strict=True)
    return t.numel() > 1 and all(size == 1 or stride == 0 for size, stride in sizes_and_strides)


# Fake kernels: the output's metadata, computed without data, so that torch.compile and
# torch.export can trace through the op. They must agree with the C++ kernels in shape,
# dtype and strides.
@torch.library.register_fake("gelu::gelu")
def _(x):
    _check_tensors("gelu", x=x)
    # Locals start with _ so that no argument name can be one.
    _layout = _shared_dense_layout(x)
    if _layout is not None:
        return torch.empty_like(_layout)
    shape = x.shape
    return x.new_empty(shape)


@torch.library.register_fake("gelu::gelu_backward")
def _(grad, x):
    _check_tensors("gelu_backward", grad=grad, x=x)
    _layout = _shared_dense_layout(None if _is_one_value(grad) else grad, x)
    if _layout is not None:
        return torch.empty_like(_layout, dtype=grad.dtype)
    return grad.new_empty(grad.shape)


# Autograd is registered in C++ (csrc/gelu_autograd.cpp): the backward is a custom op of its own
# with CPU and CUDA kernels, so it also runs under torch.compile.
