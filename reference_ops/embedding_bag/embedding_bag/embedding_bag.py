"""The Python API of embedding_bag: a typed wrapper and fake kernels for tracing.

The kernels are registered in C++ as torch.ops.embedding_bag.embedding_bag, in
csrc/embedding_bag.cpp. Autograd is registered in C++ too, in csrc/embedding_bag_autograd.cpp. This
module adds what torch.compile needs on top of them.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["embedding_bag"]

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _library_op(name: str):
    """torch.ops.embedding_bag.<name>, the op of that name that the library registers: looked up
    once, since attribute access on torch.ops costs microseconds per call."""
    return getattr(torch.ops.embedding_bag, name).default


def _cpp_operator(op):
    """The C++ operator behind an op of torch.ops. Outside torch.compile the API calls it directly,
    past the Python layer of OpOverload.__call__ (about 0.4 µs of a 2 µs call on a CPU);
    torch.compile cannot trace it, so it traces the op itself."""
    return getattr(op, "_op", op)


_forward = _library_op("embedding_bag")
_forward_eager = _cpp_operator(_forward)
# Dynamo traces the op itself, since it cannot trace the C++ operator; every other tracer
# (make_fx, non-strict torch.export) reaches the op through the C++ operator as it is.
# is_dynamo_compiling is one Python call where is_compiling takes two (65 ns of a 0.9 µs call).
_is_dynamo_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor) -> Tensor:
    """embedding_bag: your kernels (csrc/embedding_bag_cpu.h, csrc/embedding_bag_cuda.cuh) behind a
    checked, typed op.

    Args:
        weight: Tensor[float, 2], the op's dtype, one of float32, float64, float16,
            bfloat16, with 2 dimensions; on the CPU or a CUDA device.
        indices: Tensor[int64, 1], of dtype torch.int64, with 1 dimension; on weight's
            device.
        offsets: Tensor[int64, 1], of dtype torch.int64, with 1 dimension; on weight's
            device.

    Returns:
        out: a new contiguous tensor of shape (offsets.size(0), weight.size(1)), the
            op's dtype.

    Differentiable once with respect to weight.
    Double backward raises.
    """
    if _is_dynamo_tracing():
        return _forward(weight, indices, offsets)
    return _forward_eager(weight, indices, offsets)


def _check_arguments(op: str, weight, indices, offsets) -> None:
    """The checks of check_arguments in csrc/embedding_bag.cpp, for tensors without data."""
    torch._check(
        weight.dtype in SUPPORTED_DTYPES,
        lambda: (
            f"{op}: weight has dtype {weight.dtype}; supported dtypes are "
            + ", ".join(str(d) for d in SUPPORTED_DTYPES)
        ),
    )
    torch._check(
        indices.dtype == torch.int64,
        lambda: f"{op}: indices has dtype {indices.dtype}; it must be torch.int64",
    )
    torch._check(
        indices.device == weight.device,
        lambda: f"{op}: indices is on {indices.device} but weight is on {weight.device}",
    )
    torch._check(
        offsets.dtype == torch.int64,
        lambda: f"{op}: offsets has dtype {offsets.dtype}; it must be torch.int64",
    )
    torch._check(
        offsets.device == weight.device,
        lambda: f"{op}: offsets is on {offsets.device} but weight is on {weight.device}",
    )
    torch._check(
        weight.dim() == 2,
        lambda: f"{op}: weight has shape {list(weight.shape)}; it must have 2 dimensions",
    )
    torch._check(
        indices.dim() == 1,
        lambda: f"{op}: indices has shape {list(indices.shape)}; it must have 1 dimension",
    )
    torch._check(
        offsets.dim() == 1,
        lambda: f"{op}: offsets has shape {list(offsets.shape)}; it must have 1 dimension",
    )
    for size in (offsets.size(0), weight.size(1)):
        torch._check(
            size >= 0,
            lambda: (
                f"{op}: out would have a negative size by its rule "
                "(offsets.size(0), weight.size(1))"
            ),
        )


# Fake kernels: the outputs' metadata from the shape rules, computed without data, so that
# torch.compile and torch.export can trace through the op. They must agree with
# csrc/embedding_bag.cpp, which returns new contiguous tensors of these shapes.
@torch.library.register_fake("embedding_bag::embedding_bag")
def _(weight, indices, offsets):
    _check_arguments("embedding_bag", weight, indices, offsets)
    return weight.new_empty((offsets.size(0), weight.size(1)))


@torch.library.register_fake("embedding_bag::embedding_bag_backward")
def _(grad_out, weight, indices, offsets):
    _check_arguments("embedding_bag_backward", weight, indices, offsets)
    return weight.new_empty(weight.shape)


# Autograd is registered in C++ (csrc/embedding_bag_autograd.cpp): the backward is a custom op of
# its own with your CPU and CUDA code, so it also runs under torch.compile.
