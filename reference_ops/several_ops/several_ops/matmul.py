"""The Python API of matmul: a typed wrapper and fake kernels for tracing.

The kernels are registered in C++ as torch.ops.several_ops.matmul, in csrc/matmul.cpp. Autograd is
registered in C++ too, in csrc/matmul_autograd.cpp. This module adds what torch.compile needs on top
of them.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["matmul"]

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _library_op(name: str):
    """torch.ops.several_ops.<name>, the op of that name that the library registers: looked up once,
    since attribute access on torch.ops costs microseconds per call."""
    return getattr(torch.ops.several_ops, name).default


def _cpp_operator(op):
    """The C++ operator behind an op of torch.ops. Outside torch.compile the API calls it directly,
    past the Python layer of OpOverload.__call__ (about 0.4 µs of a 2 µs call on a CPU);
    torch.compile cannot trace it, so it traces the op itself."""
    return getattr(op, "_op", op)


_forward = _library_op("matmul")
_forward_eager = _cpp_operator(_forward)
# Dynamo traces the op itself, since it cannot trace the C++ operator; every other tracer
# (make_fx, non-strict torch.export) reaches the op through the C++ operator as it is.
# is_dynamo_compiling is one Python call where is_compiling takes two (65 ns of a 0.9 µs call).
_is_dynamo_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """The matrix product `a @ b` of two 2-D tensors, by a shared-memory tiled kernel.

    Accumulates in float32 for float32, float16 and bfloat16 inputs, in float64 for
    float64; no TF32.

    Args:
        a: an M×K matrix of float32, float64, float16, bfloat16, any strides, on the CPU or
            a CUDA device.
        b: a K×N matrix of the same dtype, on the same device.

    Returns:
        A new contiguous M×N matrix of that dtype.

    Differentiable with respect to a and b.
    """
    if _is_dynamo_tracing():
        return _forward(a, b)
    return _forward_eager(a, b)


def _check_matrices(op: str, a_name: str, a: Tensor, b_name: str, b: Tensor) -> None:
    """The checks of check_matrices in csrc/matmul.cpp, for tensors without data."""
    for name, t in ((a_name, a), (b_name, b)):
        torch._check(
            t.dtype in SUPPORTED_DTYPES,
            lambda name=name, t=t: (
                f"{op}: {name} has dtype {t.dtype}; supported dtypes are "
                + ", ".join(str(d) for d in SUPPORTED_DTYPES)
            ),
        )
        torch._check(
            t.dim() == 2,
            lambda name=name, t=t: f"{op}: {name} must be a 2-D matrix, got shape {list(t.shape)}",
        )
    torch._check(
        b.dtype == a.dtype, lambda: f"{op}: {b_name} has dtype {b.dtype} but {a_name} has {a.dtype}"
    )
    torch._check(
        b.device == a.device,
        lambda: f"{op}: {b_name} is on {b.device} but {a_name} is on {a.device}",
    )
    torch._check(
        a.shape[1] == b.shape[0],
        lambda: (
            f"{op}: {a_name} has shape {list(a.shape)} and {b_name} has shape {list(b.shape)}; "
            f"the columns of {a_name} must match the rows of {b_name}"
        ),
    )


# Fake kernels: the output's metadata, computed without data, so that torch.compile and
# torch.export can trace through the op. They must agree with the C++ kernels, which
# return new contiguous tensors.
@torch.library.register_fake("several_ops::matmul")
def _(a, b):
    _check_matrices("matmul", "a", a, "b", b)
    return a.new_empty((a.shape[0], b.shape[1]))


@torch.library.register_fake("several_ops::matmul_backward")
def _(grad, a, b):
    _check_matrices("matmul_backward", "grad", grad, "bᵀ", b.t())
    _check_matrices("matmul_backward", "aᵀ", a.t(), "grad", grad)
    return a.new_empty(a.shape), b.new_empty(b.shape)


# Autograd is registered in C++ (csrc/matmul_autograd.cpp): da = grad @ bᵀ and db = aᵀ @ grad,
# computed by the same kernel, as a custom op of its own so that it also runs under torch.compile.
