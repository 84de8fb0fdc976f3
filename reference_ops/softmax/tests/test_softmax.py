"""Tests of softmax on every available device and every supported dtype.

Values are checked against a PyTorch reference evaluated in float64, gradients against
autograd of that reference and gradcheck, the registration with torch.library.opcheck,
and torch.compile against eager. NaN where the reference is NaN is a match.
If the op is defined only on part of the real line (log, sqrt, ...), edit make_inputs().
"""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from softmax import WITH_CUDA
from softmax import softmax as op
from softmax import softmax_reference as reference_module

from .conftest import DEVICES, TOLERANCES, assert_close_to_reference, needs_cuda

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def library_op(name: str):
    """torch.ops.softmax.<name>, the op of that name that the library registers."""
    return getattr(torch.ops.softmax, name).default


# Tensors holding rows (shape (..., n)) and per-column tensors (shape (n,)).
ROW_ARGS = ["x"]
COLUMN_ARGS = []
# Every tensor argument, in the schema's order.
TENSOR_ARGS = ["x"]
# The float arguments' values in every test.
SCALARS = {}
GRAD_ARGS = ["x"]
# A reduction over a row adds a rounding per element, which moves every output of the row
# alike: besides the relative tolerance of one element (conftest.TOLERANCES), outputs may
# differ from the float64 reference by these fractions of the largest output, and
# gradients (sums of products that partly cancel) by these fractions of the largest
# gradient.
ROW_TOLERANCES = {
    torch.float64: 1e-10,
    torch.float32: 1e-5,
    torch.float16: 1e-3,
    torch.bfloat16: 8e-3,
}
GRAD_TOLERANCES = {
    torch.float64: 1e-10,
    torch.float32: 1e-4,
    torch.float16: 1e-2,
    torch.bfloat16: 5e-2,
}
# The op's name, as its error messages begin.
NAME = "softmax"
# The dtype of the outputs over the rows (None: the inputs').
OUT_DTYPE = None
# The op's outputs, each with the shape of the rows.
OUTPUTS = ["out"]


def make_inputs(shape, dtype, device, requires_grad=False) -> dict[str, Tensor]:
    """Random arguments for rows of `shape` (the last dimension is the row)."""
    shape = shape if isinstance(shape, tuple) else (shape,)
    inputs = {}
    for name in ROW_ARGS + COLUMN_ARGS:
        t = torch.randn(shape if name in ROW_ARGS else shape[-1:], dtype=torch.float64)
        if name in COLUMN_ARGS:
            t = t + 1.0  # weights and biases near 1, as models start them
        inputs[name] = t.to(dtype=dtype, device=device)
        inputs[name].requires_grad_(requires_grad and name in GRAD_ARGS)
    return inputs


def one_element_in(inputs: dict[str, Tensor]) -> dict[str, Tensor]:
    """`inputs` with random row tensors of the same shape that start one element into the rows
    of a wider tensor (off 16 bytes), each requiring a gradient where the one it replaces does."""
    shifted = dict(inputs)
    for name in ROW_ARGS:
        t = inputs[name]
        wide = make_inputs((*t.shape[:-1], t.shape[-1] + 1), t.dtype, t.device)[name]
        shifted[name] = wide[..., 1:].requires_grad_(t.requires_grad)
    return shifted


def outputs_of(result) -> tuple[Tensor, ...]:
    """The op's result, or the reference's, as a tuple of its one output."""
    return (result,)


def float64_reference(inputs: dict[str, Tensor]) -> tuple[Tensor, ...]:
    """The reference on the same (rounded) input values, computed in float64 (and given in
    float64 where it converts, as a quantizer's reference may: .to(torch.int8))."""
    outs = outputs_of(
        reference_module.reference(**{k: v.detach().double() for k, v in inputs.items()}, **SCALARS)
    )
    return tuple(out.double() for out in outs)


def positional(inputs: dict[str, Tensor]) -> tuple:
    """The arguments in the schema's order, for calling torch.ops directly."""
    values = {**inputs, **SCALARS}
    return tuple(values[name] for name in ["x"])


def largest_finite(t: Tensor) -> float:
    """The largest finite magnitude in t (0 if none): what the tolerances scale with."""
    finite = t[t.isfinite()]
    return finite.abs().max().item() if finite.numel() else 0.0


def assert_matches_reference(
    inputs: dict[str, Tensor], result, where_float32_is_finite: bool = False
) -> None:
    """The op's outputs `result` match the float64 reference of `inputs`; with
    where_float32_is_finite, only where PyTorch's own float32 computation of the reference is
    finite (any value passes elsewhere)."""
    first = inputs[ROW_ARGS[0]]
    outs, expected = outputs_of(result), float64_reference(inputs)
    assert len(outs) == len(expected) == len(OUTPUTS)
    if where_float32_is_finite:
        in_float = outputs_of(
            reference_module.reference(**{k: v.float() for k, v in inputs.items()}, **SCALARS)
        )
        compared = [r.to(out.dtype).isfinite() for r, out in zip(in_float, outs)]
    else:
        compared = [torch.ones_like(out, dtype=torch.bool) for out in outs]
    for k, (name, out) in enumerate(zip(OUTPUTS, outs)):
        # Both sides 0 where they are not compared.
        out, reference = out.where(compared[k], 0), expected[k].where(compared[k], 0.0)
        assert (
            out.shape == first.shape
            and out.device == first.device
            and out.dtype == (OUT_DTYPE or first.dtype)
        ), name
        dtype = first.dtype
        atol = ROW_TOLERANCES[dtype] * largest_finite(reference)
        # The kernels compute in float64 for float64 rows, else in float32; either side of a
        # rounding step passes (conftest.assert_close_to_reference).
        computed_in = torch.float64 if first.dtype == torch.float64 else torch.float32
        assert_close_to_reference(
            out.double(),
            lambda k=k: float64_reference(inputs)[k].where(compared[k], 0.0),
            computed_in,
            rtol=TOLERANCES[dtype]["rtol"],
            atol=atol,
        )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 8), (5, 300), (2, 3, 4099), (4, 1, 33)], ids=str)
def test_matches_float64_reference(device, dtype, shape):
    inputs = make_inputs(shape, dtype, device)
    assert_matches_reference(inputs, op(**inputs, **SCALARS))


def large_rows(shape, dtype, device, scale: float) -> dict[str, Tensor]:
    """make_inputs with the rows' values `scale` times larger (per-column tensors as they are)."""
    inputs = make_inputs(shape, dtype, device)
    limit = torch.finfo(dtype).max / 4
    for name in ROW_ARGS:
        inputs[name] = (inputs[name].double() * scale).clamp(-limit, limit).to(dtype)
    return inputs


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("scale", [1e2, 1e4], ids=["x100", "x10000"])
def test_large_rows_match_float64_reference(device, dtype, scale):
    # Rows far from 1, as logits of 100 or activations of 10^4, in the dtypes computed in
    # float32: a formula that overflows where its reference does not (softmax written
    # exp(x) / sum(exp(x)): NaN at logits of 100) is wrong there. Where PyTorch's own float32
    # computation of the reference is not finite either, any value passes.
    inputs = large_rows((3, 257), dtype, device, scale)
    assert_matches_reference(inputs, op(**inputs, **SCALARS), where_float32_is_finite=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_row_lengths_around_the_kernels_sizes(device, dtype):
    # The CUDA kernels hold a row in a warp, a block or a cluster of blocks, 16 bytes per
    # load, or read it again for each pass (3000: rows that part-fill 256 threads' vectors);
    # rows whose length breaks 16-byte alignment are read from the 16-byte boundary before
    # each of them, or element by element.
    for n in [2, 9, 31, 33, 255, 257, 1000, 1025, 2049, 3000, 8191, 16384, 40000]:
        inputs = make_inputs((3, n), dtype, device)
        assert_matches_reference(inputs, op(**inputs, **SCALARS))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_that_fill_a_kernels_block(device, dtype):
    # Rows of exactly a CUDA block's columns (its threads' 16-byte vectors: 2048, 4096 or
    # 16384 columns) may take a kernel of their own when every row starts on 16 bytes, and take
    # the general one with the same plan when they do not (rows of a wider tensor, one element
    # in). The rows of 16384 are more than half of any GPU's multiprocessors: fewer are split
    # over several blocks each.
    for rows, n in ((64, 2048), (64, 4096), (160, 16384)):
        inputs = make_inputs((rows, n), dtype, device)
        assert_matches_reference(inputs, op(**inputs, **SCALARS))
        inputs = one_element_in(inputs)
        assert_matches_reference(inputs, op(**inputs, **SCALARS))


# Few rows leave most of a GPU idle unless each row is split over several blocks; with more
# than 8 such rows, the column gradients are summed in batches of rows. Column gradients of
# up to a row a multiprocessor (float32) are split too.
# Many rows too long for a block or two of a cluster are streamed: each row through one block,
# read again for each stage. Many float rows of 8193-16384 columns take 8 vectors a thread.
LONG_ROWS = [(2, 131072), (33, 20000), (100, 8192), (200, 32768), (400, 12288)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", LONG_ROWS, ids=str)
def test_long_rows(device, shape):
    inputs = make_inputs(shape, DTYPES[0], device)
    assert_matches_reference(inputs, op(**inputs, **SCALARS))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0, 7), (3, 0), (0,), (2, 0, 5)], ids=str)
def test_empty_tensors(device, shape):
    inputs = make_inputs(shape, DTYPES[0], device, requires_grad=True)
    outs = outputs_of(op(**inputs, **SCALARS))
    assert all(out.shape == shape and out.dtype == (OUT_DTYPE or DTYPES[0]) for out in outs)
    loss = sum(out.sum() for out in outs)
    grads = torch.autograd.grad(loss, [inputs[name] for name in GRAD_ARGS], allow_unused=True)
    for name, g in zip(GRAD_ARGS, grads):
        assert g.shape == inputs[name].shape, name
        assert not g.abs().sum(), name  # no rows: every column's sum is zero


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_inputs(device, dtype):
    big = make_inputs((66, 130), dtype, device)
    # Rows of a wider tensor: t[:, :-1] starts them at other offsets within 16 bytes than the
    # output's rows, t[:, 8:] at the same ones (which the CUDA kernels read as vectors).
    views = (
        lambda t: t.transpose(0, 1),
        lambda t: t[::2, 1::3],
        lambda t: t[:, :-1],
        lambda t: t[:, 8:],
    )
    for view in views:
        inputs = {k: view(big[k]) for k in ROW_ARGS}
        n = inputs[ROW_ARGS[0]].shape[-1]
        # Column tensors: every other element of a longer one.
        inputs.update({k: big[k].repeat(2)[: 2 * n : 2] for k in COLUMN_ARGS})
        assert not inputs[ROW_ARGS[0]].is_contiguous()
        result = op(**inputs, **SCALARS)
        assert all(out.is_contiguous() for out in outputs_of(result))
        assert_matches_reference(inputs, result)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_views_with_a_storage_offset(device, dtype):
    # Offsets that break 16-byte alignment send the CUDA kernels down the element path.
    base = make_inputs((4 * 1024 + 8,), dtype, device)
    for offset in (1, 2, 3, 8):
        inputs = {
            k: v[offset:][: 4 * 1024].view(4, 1024) if k in ROW_ARGS else v[offset:][:1024]
            for k, v in base.items()
        }
        assert inputs[ROW_ARGS[0]].storage_offset() == offset
        assert_matches_reference(inputs, op(**inputs, **SCALARS))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [33, 4099, 131072])
def test_a_nan_in_a_row_gives_what_the_reference_gives(device, dtype, n):
    # A NaN makes its row's sums, maxima and minima NaN, as in PyTorch (torch.amax does not
    # leave it out as C's fmax does); the other rows keep their values. One NaN in the middle
    # of a row, one at the end (the kernels' tail).
    inputs = make_inputs((3, n), dtype, device)
    inputs[ROW_ARGS[0]][1, n // 2] = float("nan")
    inputs[ROW_ARGS[0]][2, -1] = float("nan")
    assert_matches_reference(inputs, op(**inputs, **SCALARS))


def test_meta_tensors_give_the_output_shape_and_dtype():
    # Meta tensors have shapes but no data: the op's fake kernel (register_fake) answers,
    # as it does when torch.compile traces the op.
    inputs = make_inputs((4, 5), DTYPES[0], "meta")
    for out in outputs_of(op(**inputs, **SCALARS)):
        assert (
            out.device.type == "meta"
            and out.shape == (4, 5)
            and out.dtype == (OUT_DTYPE or DTYPES[0])
        )


@pytest.mark.parametrize("device", DEVICES + ["meta"])
def test_bad_arguments_are_refused_naming_them(device):
    inputs = make_inputs((4, 6), DTYPES[0], device)
    first = ROW_ARGS[0]
    with pytest.raises(RuntimeError, match=f"{NAME}: {first} has shape \\[\\]; it needs a"):
        op(**{**inputs, first: inputs[first][0, 0]}, **SCALARS)
    with pytest.raises(RuntimeError, match=f"{NAME}: {first} has dtype torch.int32; supported"):
        op(**{**inputs, first: inputs[first].int()}, **SCALARS)
    for name in ROW_ARGS[1:]:
        says = f"{NAME}: {name} has shape \\[4, 5\\] but {first} has shape \\[4, 6\\]"
        with pytest.raises(RuntimeError, match=says):
            op(**{**inputs, name: inputs[name][:, :5]}, **SCALARS)
    for name in COLUMN_ARGS:
        says = f"{NAME}: {name} has shape \\[5\\] but the rows of {first} have 6 elements"
        with pytest.raises(RuntimeError, match=says):
            op(**{**inputs, name: inputs[name][:5]}, **SCALARS)
        other = torch.float64 if DTYPES[0] != torch.float64 else torch.float32
        with pytest.raises(RuntimeError, match=f"{NAME}: {name} has dtype {other}"):
            op(**{**inputs, name: inputs[name].to(other)}, **SCALARS)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    # Schema, fake kernel, autograd registration and dispatch, checked by PyTorch itself.
    inputs = make_inputs((5, 7), DTYPES[0], device, requires_grad=True)
    torch.library.opcheck(library_op("softmax"), positional(inputs))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph_matches_eager(device):
    def terms(**inputs):
        weights = torch.arange(inputs[ROW_ARGS[0]].shape[-1], device=device)
        return sum(
            out * weights * (k + 1) for k, out in enumerate(outputs_of(op(**inputs, **SCALARS)))
        )

    def loss(**inputs):
        return terms(**inputs).sum()

    inputs = make_inputs((8, 100), DTYPES[0], device, requires_grad=True)
    torch._dynamo.reset()
    # fullgraph=True fails on any graph break: the op must trace as one node.
    compiled = torch.compile(loss, fullgraph=True)
    tolerance = TOLERANCES[DTYPES[0]]
    # The compiled sum adds in another order: its rounding grows with the terms' sizes, not
    # with the sum's (which may be near 0).
    with torch.no_grad():
        sizes = terms(**inputs).abs()
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


def random_gradients(outs: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    """A random incoming gradient for each output."""
    return tuple(torch.randn_like(out) for out in outs)


def expected_gradients(inputs: dict[str, Tensor], grad_out: tuple[Tensor, ...]) -> list[Tensor]:
    """Autograd of the reference in float64 on the same (rounded) values."""
    inputs64 = {k: v.detach().double().requires_grad_(k in GRAD_ARGS) for k, v in inputs.items()}
    outs = outputs_of(reference_module.reference(**inputs64, **SCALARS))
    return list(
        torch.autograd.grad(
            outs, [inputs64[name] for name in GRAD_ARGS], [g.double() for g in grad_out]
        )
    )


def assert_gradients_match(inputs: dict[str, Tensor], grad_out: tuple[Tensor, ...], actual) -> None:
    for name, a, e in zip(GRAD_ARGS, actual, expected_gradients(inputs, grad_out)):
        assert a.dtype == inputs[name].dtype and a.shape == inputs[name].shape, name
        scale = GRAD_TOLERANCES[a.dtype] * (largest_finite(e) + 1e-3)
        torch.testing.assert_close(
            a.double(),
            e,
            rtol=0,
            atol=scale,
            equal_nan=True,
            msg=lambda m, name=name: f"gradient of {name}: {m}",
        )


def assert_op_gradients_match(inputs: dict[str, Tensor]) -> None:
    """The op's gradients for a random incoming gradient match float64's."""
    outs = outputs_of(op(**inputs, **SCALARS))
    grad_out = random_gradients(outs)
    actual = torch.autograd.grad(outs, [inputs[name] for name in GRAD_ARGS], grad_out)
    assert_gradients_match(inputs, grad_out, actual)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 257), (2, 2, 64), (1000, 8), (3, 4099)], ids=str)
def test_gradients_match_float64_reference(device, dtype, shape):
    inputs = make_inputs(shape, dtype, device, requires_grad=True)
    assert_op_gradients_match(inputs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gradient_row_lengths_around_the_kernels_sizes(device, dtype):
    # The backward's kernels hold fewer elements a thread than the forward's (they keep
    # column sums in registers), so their warp, block and cluster sizes change at other
    # lengths: 16384 2-byte columns take one 512-thread block, 40000 a cluster.
    for n in [33, 1025, 4099, 8191, 16384, 40000]:
        assert_op_gradients_match(make_inputs((3, n), dtype, device, requires_grad=True))


@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_of_rows_that_fill_a_kernels_block(dtype):
    # Many rows of exactly a CUDA block's columns: the backward of 2-byte rows of 16384 that
    # reads two rows and no per-column tensors (softmax's) takes a kernel of its own when every
    # row starts on 16 bytes, and the general one with the same plan when they do not (rows of
    # a wider tensor, one element in). More rows than half of any GPU's multiprocessors: fewer
    # are split over several blocks each.
    for rows, n in ((160, 4096), (160, 16384)):
        aligned = make_inputs((rows, n), dtype, "cuda", requires_grad=True)
        assert_op_gradients_match(aligned)
        assert_op_gradients_match(one_element_in(aligned))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", LONG_ROWS, ids=str)
def test_gradients_of_long_rows(device, shape):
    inputs = make_inputs(shape, DTYPES[0], device, requires_grad=True)
    assert_op_gradients_match(inputs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(3000, 64), (33, 20000)], ids=str)
def test_gradients_are_deterministic(device, shape):
    # Column gradients are sums over the rows, taken in a fixed order: the same bits on
    # every run, as torch.use_deterministic_algorithms expects.
    inputs = make_inputs(shape, DTYPES[0], device, requires_grad=True)
    grad_out = tuple(torch.randn_like(inputs[ROW_ARGS[0]]) for _ in OUTPUTS)
    wrt = [inputs[name] for name in GRAD_ARGS]
    first = torch.autograd.grad(outputs_of(op(**inputs, **SCALARS)), wrt, grad_out)
    for _ in range(3):
        again = torch.autograd.grad(outputs_of(op(**inputs, **SCALARS)), wrt, grad_out)
        assert all(torch.equal(a, b) for a, b in zip(first, again))


@pytest.mark.parametrize("device", DEVICES)
def test_backward_with_a_non_contiguous_gradient(device):
    inputs = make_inputs((4, 6), DTYPES[0], device, requires_grad=True)
    # Multiplying by a broadcast row sends back a gradient with zero strides.
    outs = outputs_of(op(**inputs, **SCALARS))
    grad_out = tuple(torch.randn(6, dtype=out.dtype, device=device).expand(4, 6) for out in outs)
    actual = torch.autograd.grad(outs, [inputs[name] for name in GRAD_ARGS], grad_out)
    assert_gradients_match(inputs, grad_out, actual)


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward_raises_instead_of_returning_zeros(device):
    # The backward op has no derivative of its own: differentiating it (hessian,
    # gradgradcheck, create_graph=True) must raise, never give zeros.
    inputs = make_inputs((4, 5), DTYPES[0], device, requires_grad=True)
    wrt = [inputs[name] for name in GRAD_ARGS]
    outs = outputs_of(op(**inputs, **SCALARS))
    grads = torch.autograd.grad(sum((out * out).sum() for out in outs), wrt, create_graph=True)
    with pytest.raises(RuntimeError, match=f"{NAME} is differentiable once"):
        torch.autograd.grad(sum(g.sum() for g in grads), wrt, allow_unused=True)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    # The backward kernels against finite differences of the forward kernels, in float64.
    inputs = make_inputs((4, 5), torch.float64, device, requires_grad=True)

    def f(*tensors):
        return op(**dict(zip(inputs, tensors)), **SCALARS)

    assert torch.autograd.gradcheck(f, tuple(inputs.values()))


def backward_args(inputs: dict[str, Tensor], grads: list[Tensor]) -> tuple:
    """The backward op's arguments for the gradients `grads` of the op's outputs on `inputs`."""
    # The backward reads the forward's output, y, and the column tensors (csrc/softmax_math.h).
    y = op(**inputs, **SCALARS)
    return (*grads, y, *[inputs[name] for name in COLUMN_ARGS], *SCALARS.values())


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_backward_op(device):
    inputs = make_inputs((5, 7), DTYPES[0], device)
    grads = [torch.randn(5, 7, dtype=DTYPES[0], device=device) for _ in OUTPUTS]
    torch.library.opcheck(library_op("softmax_backward"), backward_args(inputs, grads))


@needs_cuda
def test_cuda_kernels_were_built():
    assert WITH_CUDA, "built without CUDA: rebuild where nvcc is found"


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_inputs_on_a_device_other_than_the_current_one():
    # Rows long enough for several blocks a row, so that the plan, its workspace and the
    # kernels' attributes are those of the inputs' GPU, not of the current one.
    inputs = make_inputs((33, 20000), DTYPES[0], "cuda:1")
    with torch.cuda.device(0):
        result = op(**inputs, **SCALARS)
    assert_matches_reference(inputs, result)
    # The backward op, called directly: autograd would run it on its own thread for cuda:1.
    grads = [torch.randn(33, 20000, dtype=DTYPES[0], device="cuda:1") for _ in OUTPUTS]
    backward = library_op("softmax_backward")
    with torch.cuda.device(0):
        actual = backward(*backward_args(inputs, grads))
    with torch.cuda.device(1):
        expected = backward(*backward_args(inputs, grads))
    actual, expected = (actual,), (expected,)
    for a, e in zip(actual, expected):
        assert a.device == torch.device("cuda:1")
        torch.testing.assert_close(a, e, rtol=0, atol=0)


@needs_cuda
def test_runs_on_the_current_stream():
    # The kernels launch on the current stream: a side stream's results, read after that
    # stream's work, are right.
    inputs = make_inputs((64, 4099), DTYPES[0], "cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        result = op(**inputs, **SCALARS)
    stream.synchronize()
    assert_matches_reference(inputs, result)


@needs_cuda
@pytest.mark.parametrize("shape", [(61, 4097), (7, 131080)], ids=str)
def test_captured_in_a_cuda_graph(shape):
    # Captured on the first call at its shape, as a server captures a batch size it has not
    # run yet: the launch plan is made during the capture. Then replayed on new values.
    inputs = make_inputs(shape, DTYPES[0], "cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = op(**inputs, **SCALARS)
        grads = [torch.ones(shape, dtype=DTYPES[0], device="cuda") for _ in OUTPUTS]
        captured_grads = library_op("softmax_backward")(*backward_args(inputs, grads))
    for name, values in make_inputs(shape, DTYPES[0], "cuda").items():
        inputs[name].copy_(values)
    for g in grads:
        g.copy_(torch.randn_like(g))
    graph.replay()
    torch.cuda.synchronize()
    assert_matches_reference(inputs, result)
    expected = library_op("softmax_backward")(*backward_args(inputs, grads))
    torch.testing.assert_close(captured_grads, expected, rtol=0, atol=0)


@needs_cuda
def test_more_than_2_to_the_31_elements():
    # 64-bit indexing: the last rows of a tensor past 2^31 elements are computed too.
    dtype = min(DTYPES, key=lambda d: d.itemsize)
    n = 4096
    rows = (1 << 31) // n + 3
    free, _ = torch.cuda.mem_get_info()
    if free < (len(ROW_ARGS) + len(OUTPUTS) + 1) * rows * n * dtype.itemsize:
        pytest.skip("needs a CUDA GPU with room for the rows, the output and a copy")
    inputs = make_inputs((1, n), dtype, "cuda")
    for name in ROW_ARGS:
        inputs[name] = torch.randn(rows, n, device="cuda", dtype=dtype)
    outs = outputs_of(op(**inputs, **SCALARS))
    tail = {k: v[-5:] if k in ROW_ARGS else v for k, v in inputs.items()}
    assert_matches_reference(tail, outs[0][-5:])
