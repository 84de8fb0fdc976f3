"""Tests of vector_add on every available device and every supported dtype.

Values are checked against a PyTorch reference evaluated in float64, gradients against
autograd of that reference and gradcheck, the registration with torch.library.opcheck,
and torch.compile against eager. NaN where the reference is NaN is a match.
Inputs are normal values or, where the reference is not finite on those (log, sqrt, acos,
...), those of the first range in INPUT_RANGES on which it is.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor

from vector_add import WITH_CUDA
from vector_add import vector_add as op
from vector_add import vector_add_reference as reference_module

from .conftest import (
    DEVICES,
    MIXED_DEVICES,
    TOLERANCES,
    allowing_float_error,
    assert_close_to_reference,
    needs_cuda,
)

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def library_op(name: str):
    """torch.ops.vector_add.<name>, the op of that name that the library registers."""
    return getattr(torch.ops.vector_add, name).default


# Input elements of each tensor per output element.
ITEM = 1


def input_shape(shape: tuple) -> tuple:
    """Each tensor input's shape for an output of `shape`."""
    return shape


# The output's dtype; None: the inputs' dtype.
OUT_DTYPE = None
TENSOR_ARGS = ["a", "b"]
# The scalar arguments' values in every test, and other values for one test: each float
# negated and halved, each int one more, each bool flipped, so that no branch of the formulas
# goes untested.
SCALARS = {}
GRAD_ARGS = ["a", "b"]
# Gradient `grad`: passed on by autograd, no backward kernel.
PASSED_GRADS = ["a", "b"]
# The tensors the backward op reads besides the incoming gradient.
GRAD_READS = []


# The values the tests draw for floating inputs: normal ones, unless the reference is not
# finite on those (an op defined on part of the real line: log, sqrt, acos, logit); then
# normal ones moved into the first of these ranges on which its values and gradients are.
INPUT_RANGES = {
    "normal": lambda t: t,
    "positive": lambda t: t.abs() + 0.5,
    "within (-1, 1)": lambda t: t.tanh() * 0.9,
    "within (0, 1)": lambda t: t.sigmoid() * 0.8 + 0.1,
    "above 1": lambda t: t.abs() + 1.5,
}


def finite_on(move) -> bool:
    """Whether the reference and its gradients are finite on 1000 normal values moved by move
    (the same values on every run: their own generator, seeded)."""
    values = torch.Generator().manual_seed(0)
    inputs = {
        name: move(torch.randn(input_shape((1000,)), dtype=torch.float64, generator=values))
        for name in TENSOR_ARGS
    }
    for name in GRAD_ARGS:
        inputs[name].requires_grad_()
    try:
        out = reference_module.reference(**inputs, **SCALARS)
        if out.requires_grad:
            grads = torch.autograd.grad(
                out.sum(), [inputs[name] for name in GRAD_ARGS], allow_unused=True
            )
            if not all(g is None or bool(g.isfinite().all()) for g in grads):
                return False
    except Exception:  # not defined there; an error everywhere shows in the tests themselves
        return False
    return bool(out.isfinite().all())


INPUT_RANGE = next((name for name, move in INPUT_RANGES.items() if finite_on(move)), "normal")


def random_tensor(shape, dtype, device) -> Tensor:
    """Values of INPUT_RANGE for floating dtypes; integers over the dtype's range, int32 within
    ±2^26 (past 2^24, where a float stops holding every integer; products of two still exact
    in float64), not negative unless INPUT_RANGE is normal."""
    if dtype.is_floating_point:
        return INPUT_RANGES[INPUT_RANGE](torch.randn(shape, dtype=torch.float64)).to(
            dtype=dtype, device=device
        )
    info = torch.iinfo(dtype)
    low, high = max(info.min, -(1 << 26)), min(info.max + 1, 1 << 26)
    size = shape if isinstance(shape, tuple) else (shape,)
    return torch.randint(low if INPUT_RANGE == "normal" else 0, high, size).to(
        device=device, dtype=dtype
    )


def make_inputs(shape, dtype, device, requires_grad=False) -> dict[str, Tensor]:
    """Random tensor arguments for an output of `shape`."""
    shape = input_shape(shape if isinstance(shape, tuple) else (shape,))
    inputs = {}
    for name in TENSOR_ARGS:
        t = random_tensor(shape, dtype, device)
        inputs[name] = t.requires_grad_(requires_grad and name in GRAD_ARGS)
    return inputs


def float64_reference(inputs: dict[str, Tensor], scalars: dict = SCALARS) -> Tensor:
    """The reference on the same (rounded) input values, computed in float64."""
    return reference_in(torch.float64, inputs, scalars).double()


def reference_in(dtype: torch.dtype, inputs: dict[str, Tensor], scalars: dict = SCALARS) -> Tensor:
    """The reference on the same input values, computed by PyTorch in dtype."""
    return reference_module.reference(
        **{k: v.detach().to(dtype) for k, v in inputs.items()}, **scalars
    )


def assert_close_to_float64_reference(
    out: Tensor, inputs: dict[str, Tensor], scalars: dict = SCALARS
) -> None:
    """out as close to float64_reference as TOLERANCES says (either side of a rounding step:
    conftest.assert_close_to_reference). The kernels compute in float64 where an input or
    the output is float64, else in float32."""
    in_dtypes = [t.dtype for t in inputs.values()]
    computed_in = torch.float64 if torch.float64 in [*in_dtypes, out.dtype] else torch.float32
    floats = computed_in == torch.float32 and all(
        t.is_floating_point() for t in [*inputs.values(), out]
    )
    assert_close_to_reference(
        out.double(),
        lambda: float64_reference(inputs, scalars),
        computed_in,
        **TOLERANCES[out.dtype],
        in_float=(lambda: reference_in(torch.float32, inputs, scalars)) if floats else None,
    )


def positional(inputs: dict[str, Tensor]) -> tuple:
    """The arguments in the schema's order, for calling torch.ops directly."""
    values = {**inputs, **SCALARS}
    return tuple(values[name] for name in ["a", "b"])


def assert_matches_reference(
    inputs: dict[str, Tensor], out: Tensor, scalars: dict = SCALARS
) -> None:
    first = inputs[TENSOR_ARGS[0]]
    assert input_shape(out.shape) == first.shape
    assert out.device == first.device
    assert out.dtype == (OUT_DTYPE or first.dtype)
    assert_close_to_float64_reference(out, inputs, scalars)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (1000,), (33, 65), (2, 3, 4099)], ids=str)
def test_matches_float64_reference(device, dtype, shape):
    inputs = make_inputs(shape, dtype, device)
    assert_matches_reference(inputs, op(**inputs, **SCALARS))


# The ranges of INPUT_RANGES that have no bound above: scaled, their values stay in them.
UNBOUNDED_RANGES = ("normal", "positive", "above 1")


def where_pytorch_is_finite(t: Tensor, in_float: Tensor) -> Tensor:
    """t, zero where in_float (the reference as PyTorch computes it in float32) is not finite."""
    return torch.where(in_float.isfinite(), t, torch.zeros_like(t))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("scale", [1e2, 1e4], ids=["x100", "x10000"])
def test_large_inputs_match_float64_reference(device, dtype, scale):
    # Inputs far from 1, as logits of 100 or activations of 10^4, in the dtypes computed in
    # float32: a formula that overflows where its reference does not (log1p(exp(x)) against
    # softplus: inf past 88) is wrong there. Where PyTorch's own float32 computation of the
    # reference is not finite either, any value passes. (An op defined on a bounded range,
    # acos, gets its normal inputs again.)
    scale = scale if INPUT_RANGE in UNBOUNDED_RANGES else 1.0
    limit = torch.finfo(dtype).max / 4
    inputs = {
        name: (t.double() * scale).clamp(-limit, limit).to(dtype)
        for name, t in make_inputs((4, 257), dtype, device).items()
    }
    out = op(**inputs, **SCALARS)
    # The reference as PyTorch computes it in float32, stored as out is.
    in_float = reference_in(torch.float32, inputs).to(out.dtype).double()
    assert_close_to_reference(
        where_pytorch_is_finite(out.double(), in_float),
        lambda: where_pytorch_is_finite(float64_reference(inputs), in_float),
        torch.float64 if out.dtype == torch.float64 else torch.float32,
        **TOLERANCES[out.dtype],
        in_float=lambda: where_pytorch_is_finite(in_float, in_float),
    )
    leaves = {name: t.detach().requires_grad_(name in GRAD_ARGS) for name, t in inputs.items()}
    grad_out = torch.randn_like(out)
    actual = torch.autograd.grad(
        op(**leaves, **SCALARS), [leaves[name] for name in GRAD_ARGS], grad_out
    )
    assert_gradients_close(actual, leaves, grad_out, where_float32_is_finite=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sizes_around_the_vector_width(device, dtype):
    # The CUDA kernels move 16 bytes (2 to 8 elements) at a time and the rest one by one.
    for n in [1, 2, 3, 5, 7, 8, 9, 15, 17, 31, 33, 255, 257, 1023, 1025]:
        inputs = make_inputs((n,), dtype, device)
        assert_matches_reference(inputs, op(**inputs, **SCALARS))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 5)], ids=str)
def test_empty_tensors(device, shape):
    inputs = make_inputs(shape, DTYPES[0], device, requires_grad=True)
    out = op(**inputs, **SCALARS)
    assert out.shape == shape and out.dtype == (OUT_DTYPE or DTYPES[0])
    grads = torch.autograd.grad(out.sum(), [inputs[name] for name in GRAD_ARGS])
    assert all(g.shape == shape for g in grads)


@pytest.mark.parametrize("device", DEVICES)
def test_zero_dim_tensors(device):
    inputs = make_inputs((), DTYPES[0], device, requires_grad=True)
    out = op(**inputs, **SCALARS)
    assert_matches_reference(inputs, out)
    grads = torch.autograd.grad(out, [inputs[name] for name in GRAD_ARGS])
    assert all(g.shape == () for g in grads)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_inputs(device, dtype):
    base = make_inputs((66, 130), dtype, device)
    for view in (lambda t: t.transpose(0, 1), lambda t: t[::2, 1::3], lambda t: t[:, :-1]):
        inputs = {k: view(v) for k, v in base.items()}
        assert not inputs[TENSOR_ARGS[0]].is_contiguous()
        out = op(**inputs, **SCALARS)
        # Views that are dense (a transpose) keep their layout; others give contiguous results.
        assert out.is_contiguous() or out.stride() == inputs[TENSOR_ARGS[0]].stride()
        assert_matches_reference(inputs, out)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_views_with_a_storage_offset(device, dtype):
    # Offsets that break 16-byte alignment send the CUDA kernels down the scalar path.
    base = make_inputs((4101,), dtype, device)
    for offset in (1, 2, 3, 8):
        inputs = {k: v[offset:] for k, v in base.items()}
        assert inputs[TENSOR_ARGS[0]].storage_offset() == offset * ITEM
        assert_matches_reference(inputs, op(**inputs, **SCALARS))


def test_meta_tensors_give_the_output_shape_and_dtype():
    # Meta tensors have shapes but no data: the op's fake kernel (register_fake) answers,
    # as it does when torch.compile traces the op.
    inputs = make_inputs((4, 5), DTYPES[0], "meta")
    out = op(**inputs, **SCALARS)
    assert out.device.type == "meta"
    assert out.shape == (4, 5) and out.dtype == (OUT_DTYPE or DTYPES[0])


def test_a_backend_without_a_kernel_is_refused_naming_the_op():
    # Kernels exist for CPU, CUDA and Meta tensors only. Any other backend (MPS, XPU, CUDA
    # in a build without CUDA; sparse tensors here) is refused by the dispatcher.
    shape = input_shape((4, 5))
    inputs = {name: torch.ones(shape).to_sparse() for name in TENSOR_ARGS}
    says = "Could not run 'vector_add::vector_add' with arguments from the 'SparseCPU'"
    with pytest.raises(NotImplementedError, match=says):
        op(**inputs, **SCALARS)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    # Schema, fake kernel, autograd registration and dispatch, checked by PyTorch itself.
    inputs = make_inputs((5, 7), DTYPES[0], device, requires_grad=True)
    torch.library.opcheck(library_op("vector_add"), positional(inputs))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph_matches_eager(device):
    def loss(**inputs):
        return (op(**inputs, **SCALARS) * 3).sum()

    inputs = make_inputs((1000,), DTYPES[0], device, requires_grad=True)
    torch._dynamo.reset()
    # fullgraph=True fails on any graph break: the op must trace as one node.
    compiled = torch.compile(loss, fullgraph=True)
    tolerance = TOLERANCES[OUT_DTYPE or DTYPES[0]]
    # The compiled sum adds in another order: its rounding grows with the terms' sizes, not
    # with the sum's (which may be near 0).
    with torch.no_grad():
        sizes = (op(**inputs, **SCALARS) * 3).abs()
        atol = tolerance["rtol"] * sizes[sizes.isfinite()].sum().item()
    # NaN where eager's sum is NaN is a match, as in the other tests (an op of 0 / 0).
    torch.testing.assert_close(
        compiled(**inputs),
        loss(**inputs),
        rtol=tolerance["rtol"],
        atol=max(atol, tolerance["atol"]),
        equal_nan=True,
    )
    grads = [inputs[name] for name in GRAD_ARGS]
    expected = torch.autograd.grad(loss(**inputs), grads)
    actual = torch.autograd.grad(compiled(**inputs), grads)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, **tolerance)


def reference_gradients(
    dtype: torch.dtype, inputs: dict[str, Tensor], grad_out: Tensor, names=GRAD_ARGS
) -> tuple:
    """The reference's gradients of names for grad_out (autograd through it), at the inputs'
    values, computed by PyTorch in dtype."""
    converted = {k: v.detach().to(dtype).requires_grad_(k in names) for k, v in inputs.items()}
    out = reference_module.reference(**converted, **SCALARS)
    return torch.autograd.grad(out, [converted[name] for name in names], grad_out.to(dtype))


def assert_gradients_close(
    actual,
    inputs: dict[str, Tensor],
    grad_out: Tensor,
    names=GRAD_ARGS,
    where_float32_is_finite=False,
) -> None:
    """actual, the op's gradients of names for grad_out, within TOLERANCES of the reference's
    gradients in float64, or no farther than PyTorch's own float32 autograd through the
    reference allows (conftest.allowing_float_error: the gradients of a formula whose terms
    cancel). With where_float32_is_finite, only where that float32 gradient, stored in the
    gradient's dtype, is finite."""
    expected = reference_gradients(torch.float64, inputs, grad_out, names)
    in_float = reference_gradients(torch.float32, inputs, grad_out, names)
    for name, a, e, f in zip(names, actual, expected, in_float):
        assert a.dtype == inputs[name].dtype, name
        if where_float32_is_finite:
            f = f.to(a.dtype).double()
            finite = f.isfinite() & e.isfinite()
            a, e, f = a[finite], e[finite], f[finite]
        tolerance = TOLERANCES[a.dtype]
        if a.dtype != torch.float64:
            tolerance = allowing_float_error(tolerance, e, f)
        torch.testing.assert_close(
            a.double(), e, **tolerance, msg=lambda m, name=name: f"{name}: {m}"
        )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_match_float64_reference(device, dtype):
    inputs = make_inputs((3, 257), dtype, device, requires_grad=True)
    out = op(**inputs, **SCALARS)
    grad_out = torch.randn_like(out)
    actual = torch.autograd.grad(out, [inputs[name] for name in GRAD_ARGS], grad_out)
    assert_gradients_close(actual, inputs, grad_out)


@pytest.mark.parametrize("device", DEVICES)
def test_backward_with_a_non_contiguous_gradient(device):
    inputs = make_inputs((4, 6), DTYPES[0], device, requires_grad=True)
    out = op(**inputs, **SCALARS)
    # sum() sends back an expanded gradient with zero strides.
    actual = torch.autograd.grad(out.sum(), inputs[GRAD_ARGS[0]])
    assert_gradients_close(actual, inputs, torch.ones_like(out), GRAD_ARGS[:1])


@pytest.mark.parametrize("device", DEVICES)
def test_the_gradient_of_a_sum_is_read_as_it_is_not_copied(device):
    # sum() sends back one value expanded to the output's shape: the backward kernels read
    # that value for every element, without first copying it out to the whole shape.
    # (torch.autograd.grad: .backward() would have the leaves' .grad copy an expanded
    # gradient, as it does for eager ops.)
    inputs = make_inputs((64, 1024), DTYPES[0], device, requires_grad=True)
    loss = op(**inputs, **SCALARS).sum()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        torch.autograd.grad(loss, [inputs[name] for name in GRAD_ARGS])
    copies = [e.name for e in profile.events() if e.name in ("aten::copy_", "aten::clone")]
    assert not copies, copies


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_records_the_op_only_when_a_gradient_is_needed(device):
    # The autograd kernel goes straight to the kernel when no input requires grad or grad
    # mode is off (what keeps small calls fast); whenever any one input requires grad it
    # must record the op, and that input's gradient must be right.
    plain = make_inputs((4, 6), DTYPES[0], device)
    out = op(**plain, **SCALARS)
    assert not out.requires_grad and out.grad_fn is None
    for name in GRAD_ARGS:
        inputs = {k: v.detach().requires_grad_(k == name) for k, v in plain.items()}
        with torch.no_grad():
            assert op(**inputs, **SCALARS).grad_fn is None
        out = op(**inputs, **SCALARS)
        assert out.requires_grad and out.grad_fn is not None, name
        actual = torch.autograd.grad(out.sum(), inputs[name])
        assert_gradients_close(actual, inputs, torch.ones_like(out), [name])


@pytest.mark.parametrize("device", DEVICES)
def test_forward_mode_ad_is_refused_not_dropped(device):
    # There is no forward-mode formula: a dual input must raise, never give a result
    # without its tangent.
    import torch.autograd.forward_ad as forward_ad

    inputs = make_inputs((5,), DTYPES[0], device)
    first = GRAD_ARGS[0]
    with forward_ad.dual_level():
        inputs[first] = forward_ad.make_dual(inputs[first], torch.ones_like(inputs[first]))
        with pytest.raises(RuntimeError, match="jvp is not implemented"):
            op(**inputs, **SCALARS)


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_that_are_grad_itself_are_passed_on_without_a_kernel(device):
    # a, b: gradient `grad`, so autograd hands the incoming gradient on,
    # as eager's add does: the same tensor, no kernel, no copy.
    inputs = make_inputs((4, 6), DTYPES[0], device, requires_grad=True)
    out = op(**inputs, **SCALARS)
    grad_out = torch.randn_like(out)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        grads = torch.autograd.grad(out, [inputs[name] for name in PASSED_GRADS], grad_out)
    copies = [e.name for e in profile.events() if e.name in ("aten::copy_", "aten::clone")]
    assert not copies, copies
    for name, g in zip(PASSED_GRADS, grads):
        assert g.data_ptr() == grad_out.data_ptr() and torch.equal(g, grad_out), name


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    # The backward kernels against finite differences of the forward kernels, in float64.
    inputs = make_inputs((4, 5), torch.float64, device, requires_grad=True)

    def f(*tensors):
        return op(**dict(zip(inputs, tensors)), **SCALARS)

    assert torch.autograd.gradcheck(f, tuple(inputs.values()))


@pytest.mark.parametrize("device", DEVICES)
def test_rejects_an_unsupported_dtype_naming_the_argument(device):
    inputs = make_inputs((8,), DTYPES[0], device)
    inputs[TENSOR_ARGS[-1]] = torch.zeros(8, dtype=torch.bool, device=device)
    with pytest.raises(RuntimeError, match=f"{TENSOR_ARGS[-1]} has dtype torch.bool"):
        op(**inputs, **SCALARS)


@pytest.mark.parametrize("device", DEVICES)
def test_channels_last_inputs_keep_their_layout_without_a_copy(device):
    # Inputs that share a dense layout are read as they are, and the output takes it, as
    # eager's elementwise ops do.
    inputs = {
        name: t.contiguous(memory_format=torch.channels_last)
        for name, t in make_inputs((2, 3, 5, 7), DTYPES[0], device).items()
    }
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        out = op(**inputs, **SCALARS)
    copies = [e.name for e in profile.events() if e.name in ("aten::copy_", "aten::clone")]
    assert not copies, copies
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert_matches_reference(inputs, out)
    leaves = {name: t.detach().requires_grad_(name in GRAD_ARGS) for name, t in inputs.items()}
    out = op(**leaves, **SCALARS)
    grads = torch.autograd.grad(out, [leaves[name] for name in GRAD_ARGS], torch.randn_like(out))
    assert all(g.is_contiguous(memory_format=torch.channels_last) for g in grads)


# Shapes that broadcast, as PyTorch's own ops take them: in each test every tensor in turn
# gets the second shape and the others the first, so that each is once the broadcast one.
BROADCASTS = [
    ((4, 6), (6,)),  # a bias over rows
    ((2, 3, 5, 8), (3, 1, 1)),  # a scale over dimension 1 of a batch
    ((6,), (4, 6)),  # the other way round: the output has the second shape
    ((4, 1), (1, 5)),  # both broadcast
    ((3, 8, 2), ()),  # a 0-dimensional tensor
    # More alternations than the CUDA kernels' offsets hold: copied out, then computed.
    ((2, 1, 2, 1, 2, 1, 2, 1), (1, 2, 1, 2, 1, 2, 1, 2)),
]


def broadcast_inputs(shapes, position, dtype, device, offset=0) -> dict[str, Tensor]:
    """The tensor at `position` of shapes[1], the others of shapes[0]; with `offset`, each a
    view that starts `offset` elements into its storage (not 16-byte aligned)."""
    inputs = {}
    for index, name in enumerate(TENSOR_ARGS):
        shape = shapes[1] if index == position else shapes[0]
        numel = math.prod(shape)
        flat = random_tensor((numel + offset,), dtype, device)
        inputs[name] = flat[offset:].view(shape).requires_grad_(name in GRAD_ARGS)
    return inputs


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "offset"])
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
def test_broadcast_inputs_match_float64_reference(device, dtype, offset, shapes):
    for position in range(len(TENSOR_ARGS)):
        inputs = broadcast_inputs(shapes, position, dtype, device, offset)
        out = op(**inputs, **SCALARS)
        assert out.shape == float64_reference(inputs).shape and out.dtype == (OUT_DTYPE or dtype)
        assert_close_to_float64_reference(out, inputs)
        check_broadcast_gradients(inputs, out)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_inputs_with_gaps_are_read_through_their_strides(device, dtype):
    # Every other element of each tensor: a step of 2 along the last dimension, element by
    # element (the full-size tensors are not dense, so nothing is read as a block).
    for position in range(len(TENSOR_ARGS)):
        inputs = {}
        for index, name in enumerate(TENSOR_ARGS):
            shape = (40,) if index == position else (4, 40)
            wide = random_tensor((*shape[:-1], 80), dtype, device)
            inputs[name] = wide[..., ::2].requires_grad_(name in GRAD_ARGS)
        out = op(**inputs, **SCALARS)
        assert_close_to_float64_reference(out, inputs)
        check_broadcast_gradients(inputs, out)


def check_broadcast_gradients(inputs, out):
    """Each gradient computed per output element in dtype, then summed back to its input's
    shape: the reference does the same from float64 values rounded to dtype, and allows the
    rounding of the sum (eps for each summed term's size) and PyTorch's own float32 error
    (conftest.allowing_float_error)."""
    grad_out = torch.randn_like(out)
    actual = torch.autograd.grad(out, [inputs[name] for name in GRAD_ARGS], grad_out)
    full = {k: v.detach().expand(out.shape) for k, v in inputs.items()}
    per_element = reference_gradients(torch.float64, full, grad_out)
    in_float = reference_gradients(torch.float32, full, grad_out)
    for name, a, e, f in zip(GRAD_ARGS, actual, per_element, in_float):
        dtype = inputs[name].dtype
        assert a.shape == inputs[name].shape and a.dtype == dtype, name
        rounded = e.to(dtype).double()
        summed_size = rounded.abs().sum_to_size(a.shape).max().item()
        tolerance = dict(TOLERANCES[dtype])
        if dtype != torch.float64:
            tolerance = allowing_float_error(
                tolerance, e.sum_to_size(a.shape), f.double().sum_to_size(a.shape)
            )
        tolerance["atol"] += torch.finfo(dtype).eps * summed_size
        torch.testing.assert_close(
            a.double(),
            rounded.sum_to_size(a.shape),
            **tolerance,
            msg=lambda m, name=name: f"{name}: {m}",
        )


@pytest.mark.parametrize("device", DEVICES)
def test_broadcast_inputs_are_read_in_place_and_the_output_keeps_the_layout(device):
    # A channels_last batch with a scale over its dimension 1: no copies of either, and the output
    # in the batch's layout, as eager's.
    for position in range(len(TENSOR_ARGS)):
        inputs = broadcast_inputs(((2, 3, 5, 8), (3, 1, 1)), position, DTYPES[0], device)
        inputs = {
            name: t.detach().contiguous(memory_format=torch.channels_last)
            if t.dim() == 4
            else t.detach()
            for name, t in inputs.items()
        }
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            out = op(**inputs, **SCALARS)
        copies = [e.name for e in profile.events() if e.name in ("aten::copy_", "aten::clone")]
        assert not copies, copies
        assert out.is_contiguous(memory_format=torch.channels_last)
        assert_close_to_float64_reference(out, inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_with_broadcast_inputs(device):
    def loss(**inputs):
        return (op(**inputs, **SCALARS) * 3).sum()

    inputs = broadcast_inputs(((16, 8), (8,)), len(TENSOR_ARGS) - 1, DTYPES[0], device)
    torch._dynamo.reset()
    compiled = torch.compile(loss, fullgraph=True)
    tolerance = TOLERANCES[OUT_DTYPE or DTYPES[0]]
    torch.testing.assert_close(compiled(**inputs), loss(**inputs), **tolerance)
    grads = [inputs[name] for name in GRAD_ARGS]
    expected = torch.autograd.grad(loss(**inputs), grads)
    actual = torch.autograd.grad(compiled(**inputs), grads)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape
        torch.testing.assert_close(a, e, **tolerance)


@pytest.mark.parametrize("device", DEVICES)
def test_rejects_shapes_that_do_not_broadcast_naming_the_argument(device):
    inputs = make_inputs((4, 6), DTYPES[0], device)
    inputs[TENSOR_ARGS[-1]] = inputs[TENSOR_ARGS[-1]][:, :5]
    with pytest.raises(RuntimeError, match=rf"{TENSOR_ARGS[-1]} has shape \[4, 5\] but"):
        op(**inputs, **SCALARS)
    with pytest.raises(RuntimeError, match=rf"{TENSOR_ARGS[-1]} has shape \[4, 5\] but"):
        op(**{name: t.to("meta") for name, t in inputs.items()}, **SCALARS)


@pytest.mark.parametrize("device", DEVICES)
def test_rejects_mismatched_shapes_naming_the_argument(device):
    inputs = make_inputs((8,), DTYPES[0], device)
    inputs[TENSOR_ARGS[-1]] = inputs[TENSOR_ARGS[-1]][:7]
    with pytest.raises(RuntimeError, match=rf"{TENSOR_ARGS[-1]} has shape \[7\]"):
        op(**inputs, **SCALARS)


@pytest.mark.parametrize("device", DEVICES)
def test_rejects_mixed_dtypes_naming_the_argument(device):
    other = DTYPES[1] if len(DTYPES) > 1 else torch.float64
    if other == DTYPES[0]:
        other = torch.float32
    inputs = make_inputs((8,), DTYPES[0], device)
    inputs[TENSOR_ARGS[-1]] = inputs[TENSOR_ARGS[-1]].to(other)
    with pytest.raises(RuntimeError, match=f"{TENSOR_ARGS[-1]} has dtype {other}"):
        op(**inputs, **SCALARS)


@pytest.mark.parametrize("first, last", MIXED_DEVICES)
def test_rejects_mixed_devices_naming_the_argument(first, last):
    inputs = make_inputs((8,), DTYPES[0], first)
    inputs[TENSOR_ARGS[-1]] = inputs[TENSOR_ARGS[-1]].to(last)
    says = f"{TENSOR_ARGS[-1]} is on {last}.* but {TENSOR_ARGS[0]} is on {first}"
    with pytest.raises(RuntimeError, match=says):
        op(**inputs, **SCALARS)


@needs_cuda
def test_cuda_kernels_were_built():
    assert WITH_CUDA, "built without CUDA: rebuild where nvcc is found"


@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_tensor_on_cuda(dtype):
    inputs = make_inputs((1 << 22) + 3, dtype, "cuda")
    assert_matches_reference(inputs, op(**inputs, **SCALARS))


def fill_periodically_(dst: Tensor, src: Tensor) -> Tensor:
    """dst[i] = src[i % len(src)] for 1-D tensors, in a few copies on dst's device."""
    done = min(len(src), len(dst))
    dst[:done].copy_(src[:done])
    while done < len(dst):  # done stays a multiple of len(src) until the last copy
        step = min(done, len(dst) - done)
        dst[done : done + step].copy_(dst[:step])
        done += step
    return dst


@needs_cuda
@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "storage_offset"])
def test_more_than_2_to_the_31_elements(offset):
    # 64-bit indexing: a 32-bit index overflows past 2^31 - 1 elements. The smallest dtype
    # keeps memory down; offset 1 sends the kernel down the scalar (unaligned) path.
    dtype = min(DTYPES, key=lambda d: d.itemsize)
    n = (1 << 31) + 1029  # output elements; odd, so there is a tail after the vectors
    per_output = len(TENSOR_ARGS) * ITEM * dtype.itemsize + (OUT_DTYPE or dtype).itemsize
    needed, free = n * per_output + (1 << 30), torch.cuda.mem_get_info()[0]
    if free < needed:
        pytest.skip(f"needs {needed / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} free")
    inputs = out = flat = window = None
    try:
        # Random values repeating with a period that does not divide 2^31.
        pattern = make_inputs(((1 << 20) + 7,), dtype, "cuda")
        inputs = {}
        for name in TENSOR_ARGS:
            flat = torch.empty(offset + n * ITEM, dtype=dtype, device="cuda")[offset:]
            fill_periodically_(flat, pattern[name].reshape(-1))
            inputs[name] = flat.view(input_shape((n,)))
        out = op(**inputs, **SCALARS)
        assert out.shape == (n,)
        # Values at the start, where the input and the output indices pass 2^31, and at
        # the end: copying the whole output to the CPU would take minutes.
        for start in (0, (1 << 31) // ITEM - 512, (1 << 31) - 512, n - 1024):
            window = {name: t[start : start + 1024] for name, t in inputs.items()}
            assert_close_to_float64_reference(out[start : start + 1024], window)
    finally:
        # Frees the memory even where a failure's traceback keeps this frame alive.
        inputs = out = flat = window = None
        torch.cuda.empty_cache()


@needs_cuda
def test_runs_on_the_current_stream():
    inputs = make_inputs((1 << 20,), DTYPES[0], "cuda")
    new_values = make_inputs((1 << 20,), DTYPES[0], "cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        # The stream is busy, then writes new inputs: a kernel launched on any other stream
        # runs at once and reads the old ones.
        torch.cuda._sleep(100_000_000)
        for name in TENSOR_ARGS:
            inputs[name].copy_(new_values[name])
        out = op(**inputs, **SCALARS)
    stream.synchronize()
    assert_matches_reference(new_values, out)


@needs_cuda
def test_captured_in_a_cuda_graph():
    inputs = make_inputs((4097,), DTYPES[0], "cuda")
    op(**inputs, **SCALARS)  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = op(**inputs, **SCALARS)
    for name in TENSOR_ARGS:  # new values in the captured buffers
        inputs[name].copy_(random_tensor(inputs[name].shape, DTYPES[0], "cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert_matches_reference(inputs, out)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_inputs_on_a_device_other_than_the_current_one():
    inputs = make_inputs((1025,), DTYPES[0], "cuda:1")
    with torch.cuda.device(0):
        out = op(**inputs, **SCALARS)
    assert out.device == torch.device("cuda:1")
    assert_matches_reference(inputs, out)
