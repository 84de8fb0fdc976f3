"""The Python API of fused_axpby: a typed wrapper and fake kernels for tracing.

The kernels are registered in C++ as torch.ops.fused_axpby_stable.fused_axpby, in
csrc/fused_axpby.cpp. Autograd is registered here, in Python: the stable ABI the library is built on
has no C++ autograd. This module adds what torch.compile needs on top of them.
"""

from __future__ import annotations

import torch
import torch.autograd.forward_ad as _forward_ad
from torch import Tensor

__all__ = ["fused_axpby"]

SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _library_op(name: str):
    """torch.ops.fused_axpby_stable.<name>, the op of that name that the library registers: looked
    up once, since attribute access on torch.ops costs microseconds per call."""
    return getattr(torch.ops.fused_axpby_stable, name).default


def _cpp_operator(op):
    """The C++ operator behind an op of torch.ops. Outside torch.compile the API calls it directly,
    past the Python layer of OpOverload.__call__ (about 0.4 µs of a 2 µs call on a CPU);
    torch.compile cannot trace it, so it traces the op itself."""
    return getattr(op, "_op", op)


_forward = _library_op("fused_axpby")
_forward_eager = _cpp_operator(_forward)
# Every tracer (non-strict torch.export too) takes the op whose autograd is registered below,
# not the autograd.Function of the package's own calls.
_is_compiling = torch.compiler.is_compiling


def fused_axpby(a: float, x: Tensor, b: Tensor) -> Tensor:
    """Elementwise `a * x + b`, in one kernel.

    Computed in float64 where the input or the output is float64, else in float32.

    Args:
        a: a float.
        x: a tensor of float32, float64, float16, bfloat16, on the CPU or a CUDA device.
        b: a tensor of float32, float64, float16, bfloat16, with the dtype and
            device of x.

    Returns:
        A new tensor in the layout of the tensors where they share a dense one (channels_last,
        transposed alike), else contiguous, on x's device, of x's dtype, with the
        shape the tensors broadcast to.

    The tensors broadcast as in PyTorch (x, b of shapes (N, C) and (C,), say): read in
    place, without copies. The gradient of a broadcast input is summed back to its shape.

    Differentiable once with respect to x, b. Double backward raises.
    """
    # Only names of this module that start with _ below: an argument may be named torch.
    if _is_compiling():  # traced as one node, with the autograd registered below
        return _forward(a, x, b)
    if _forward_ad._current_level >= 0 or (
        _is_grad_enabled() and (x.requires_grad or b.requires_grad)
    ):
        _refuse_forward_ad(x, b)
        return _Autograd.apply(a, x, b)
    # Nothing for autograd to record: straight to the kernels, through the same kernels
    # registered without an autograd kernel (the Python one below costs microseconds a call).
    try:
        return _forward_no_autograd(a, x, b)
    except NotImplementedError:  # no kernel for these tensors: the op's own error names it
        return _forward_eager(a, x, b)


def _check_tensors(op: str, /, **tensors: Tensor) -> None:
    """The checks of check_tensors in csrc/fused_axpby.cpp, for tensors without data."""
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


def _broadcast_shape(op: str, /, **tensors: Tensor) -> torch.Size:
    """The shape the tensors broadcast to, as broadcast_shape in csrc/fused_axpby.cpp."""
    shape: list = []
    for count, (name, t) in enumerate(tensors.items()):
        for size, have in zip(reversed(t.shape), reversed(shape), strict=False):
            torch._check(
                size == have or size == 1 or have == 1,
                lambda name=name, t=t, count=count, shape=list(shape): (
                    f"{op}: {name} has shape {list(t.shape)} but "
                    + ", ".join(list(tensors)[:count])
                    + (" has shape " if count == 1 else " broadcast to ")
                    + str(shape)
                ),
            )
        shape = [1] * (t.dim() - len(shape)) + shape
        for d in range(1, t.dim() + 1):
            if shape[-d] == 1:
                shape[-d] = t.shape[-d]
    return torch.Size(shape)


# The layout rule of the C++ kernels (csrc/fused_axpby.cpp), for the fake kernels: tensors that are
# all dense (no gaps, no overlap, as ATen's is_non_overlapping_and_dense) with the same strides give
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
@torch.library.register_fake("fused_axpby_stable::fused_axpby")
@torch.library.register_fake("fused_axpby_stable::_fused_axpby_no_autograd")
def _(a, x, b):
    _check_tensors("fused_axpby", x=x, b=b)
    # Locals start with _ so that no argument name can be one.
    _shape = _broadcast_shape("fused_axpby", x=x, b=b)
    # The layout of the tensors that have the output's shape (see _shared_dense_layout).
    _full = [_t for _t in (x, b) if _t.shape == _shape]
    _layout = _shared_dense_layout(*_full) if _full else None
    if _layout is not None:
        return torch.empty_like(_layout)
    shape = _shape
    return x.new_empty(shape)


@torch.library.register_fake("fused_axpby_stable::fused_axpby_backward")
def _(grad, a):
    _check_tensors("fused_axpby_backward", grad=grad)
    _layout = _shared_dense_layout(None if _is_one_value(grad) else grad)
    if _layout is not None:
        return torch.empty_like(_layout, dtype=grad.dtype)
    return grad.new_empty(grad.shape)


def _refuse_forward_ad(*tensors: Tensor) -> None:
    """A dual input (forward-mode AD) must raise, never lose its tangent: there is no
    forward-mode formula, and torch's Python autograd registration would pass the op the
    primal alone."""
    if _forward_ad._current_level >= 0 and any(
        _forward_ad.unpack_dual(t).tangent is not None for t in tensors
    ):
        raise RuntimeError(
            "fused_axpby: jvp is not implemented: forward-mode AD (dual tensors) is not "
            "supported; use reverse mode (backward, torch.autograd.grad)"
        )


_is_grad_enabled = torch.is_grad_enabled
# Dispatches below the autograd kernel, as torch.library's own registration does.
_BelowAutograd = torch._C._AutoDispatchBelowAutograd
# The forward's kernels registered again as an op with no autograd kernel (csrc/library.cpp):
# past the dispatcher's C++ autograd fallback, which passes a call that needs no gradient on.
# Called outside torch.compile only: its C++ operator, as _forward_eager.
_forward_no_autograd = _cpp_operator(_library_op("_fused_axpby_no_autograd"))
_backward_op = _library_op("fused_axpby_backward")


# Autograd, in Python: the stable ABI has no C++ autograd. Autograd itself sums the gradient of an
# input that broadcast back to its shape. The backward is the custom op fused_axpby_backward, with
# CPU and CUDA kernels, so it also runs under torch.compile.
def _setup_context(ctx, inputs, output):
    # inputs: a, x, b
    ctx.scalars = (inputs[0],)


def _backward(ctx, grad):
    if _is_grad_enabled():
        # create_graph=True: through the backward op's autograd, which raises if differentiated.
        grads = _backward_op(grad, *ctx.scalars)
    else:
        with _BelowAutograd():
            grads = _backward_op(grad, *ctx.scalars)
    grads = (grads,)
    # One gradient per argument (None for a).
    return (
        None,
        grads[0],
        grad,
    )


torch.library.register_autograd(
    "fused_axpby_stable::fused_axpby",
    _backward,
    setup_context=_setup_context,
)


class _Autograd(torch.autograd.Function):
    """The same autograd for calls of fused_axpby() outside torch.compile: a torch.autograd.Function
    costs half the Python of the registration above per call."""

    @staticmethod
    def forward(ctx, *args):
        # (A setup_context method of its own would cost an inspect.signature a call.) Grad
        # mode is off here, so the op without an autograd kernel records nothing.
        out = _forward_no_autograd(*args)
        _setup_context(ctx, args, out)
        return out

    backward = staticmethod(_backward)


def _backward_of_backward(ctx, *grads):
    raise RuntimeError(
        "fused_axpby is differentiable once: its backward, fused_axpby_backward, has no "
        "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is not "
        "supported"
    )


# The backward op differentiated again (create_graph=True, hessian, gradgradcheck) raises
# instead of returning zeros.
torch.library.register_autograd(
    "fused_axpby_stable::fused_axpby_backward",
    _backward_of_backward,
)
