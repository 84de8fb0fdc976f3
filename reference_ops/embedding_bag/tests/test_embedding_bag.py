"""Tests of embedding_bag: your kernels against your reference, and everything around them.

Generated, and kept up to date by opgen update. What the op computes lives in your files
(csrc/embedding_bag_cpu.h, csrc/embedding_bag_cuda.cuh, embedding_bag/_embedding_bag_reference.py);
these tests take the inputs from make_inputs() there and check that the CPU and CUDA kernels agree
with reference(), evaluated in float64; the gradients against autograd of the reference and
gradcheck; the registration with torch.library.opcheck; torch.compile(fullgraph=True); and the
checks that follow from the signature.
"""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from embedding_bag import WITH_CUDA
from embedding_bag import _embedding_bag_reference as reference_module
from embedding_bag import embedding_bag as op

from .conftest import DEVICES, MIXED_DEVICES, TOLERANCES, assert_close_to_reference, needs_cuda

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
# The arguments in the schema's order; those of the op's dtype (the tests pass float64
# copies of them to the reference).
ARGS = ["weight", "indices", "offsets"]
OP_DTYPE_ARGS = ["weight"]
GRAD_ARGS = ["weight"]
GRAD_TOLERANCES = {torch.float64: 1e-10, torch.float32: 1e-5}
# The op's name, as its error messages begin.
NAME = "embedding_bag"
# Sizes for make_inputs: empty, one, odd, and more than one CPU task or CUDA block.
SIZES = [0, 1, 7, 300]


def library_op(name: str):
    """torch.ops.embedding_bag.<name>, the op of that name that the library registers."""
    return getattr(torch.ops.embedding_bag, name).default


def outputs(results) -> tuple[Tensor, ...]:
    return results if isinstance(results, tuple) else (results,)


def float64(inputs: dict) -> dict:
    """The inputs with the op's dtype as float64, for the reference."""
    return {k: v.detach().double() if k in OP_DTYPE_ARGS else v for k, v in inputs.items()}


def tolerance(dtype: torch.dtype) -> dict:
    # Integer and bool outputs: a float result truncated may land one below the reference's.
    return TOLERANCES.get(dtype, dict(rtol=0, atol=1))


def assert_matches_reference(inputs: dict, results) -> None:
    expected = outputs(reference_module.reference(**float64(inputs)))
    actual = outputs(results)
    assert len(actual) == len(expected)
    first = inputs["weight"]

    def reference_output(index: int) -> Tensor:  # again for each output, as it may round
        return outputs(reference_module.reference(**float64(inputs)))[index].double()

    for index, (got, want) in enumerate(zip(actual, expected)):
        assert got.shape == want.shape and got.device == first.device
        assert got.is_contiguous()
        # Either side of a rounding step passes (conftest.assert_close_to_reference), taking
        # the kernels to compute in float64 for float64 outputs, else in float32.
        computed_in = torch.float64 if got.dtype == torch.float64 else torch.float32
        assert_close_to_reference(
            got.double(),
            lambda index=index: reference_output(index),
            computed_in,
            **tolerance(got.dtype),
        )


def reference_refuses(inputs: dict) -> bool:
    """Whether the reference raises for these inputs: a shape rule that gives a negative size
    at this size (`offsets.size(0) - 1` for no offsets), say. The op must refuse them too."""
    try:
        reference_module.reference(**float64(inputs))
    except RuntimeError:
        return True
    return False


def positional(inputs: dict) -> tuple:
    """The arguments in the schema's order, for calling torch.ops directly."""
    return tuple(inputs[name] for name in ARGS)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", SIZES)
def test_matches_reference(device, dtype, size):
    inputs = reference_module.make_inputs(size, dtype, device)
    if reference_refuses(inputs):
        with pytest.raises(RuntimeError):
            op(**inputs)
        return
    assert_matches_reference(inputs, op(**inputs))


@pytest.mark.parametrize("device", DEVICES)
def test_non_contiguous_inputs(device):
    # Every tensor as a view with the same values and a stride of 2 in its last dimension:
    # the glue passes contiguous copies to the kernels.
    inputs = reference_module.make_inputs(50, DTYPES[0], device)
    views = {
        k: torch.stack([v, v], dim=-1)[..., 0] if isinstance(v, Tensor) and v.dim() else v
        for k, v in inputs.items()
    }
    assert_matches_reference(inputs, op(**views))


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_on_meta_tensors_match_the_kernels(device):
    # The fake kernel (the shape rules) against what the kernels allocate.
    inputs = reference_module.make_inputs(20, DTYPES[0], device)
    meta = {k: v.to("meta") if isinstance(v, Tensor) else v for k, v in inputs.items()}
    for fake, real in zip(outputs(op(**meta)), outputs(op(**inputs))):
        assert fake.shape == real.shape and fake.dtype == real.dtype and fake.device.type == "meta"


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    torch.library.opcheck(
        library_op("embedding_bag"), positional(reference_module.make_inputs(20, DTYPES[0], device))
    )


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph_matches_eager(device):
    torch._dynamo.reset()
    compiled = torch.compile(op, fullgraph=True)
    for size in (20, 33):  # a second size: recompiled or traced dynamically, still right
        inputs = reference_module.make_inputs(size, DTYPES[0], device)
        for got, want in zip(outputs(compiled(**inputs)), outputs(op(**inputs))):
            torch.testing.assert_close(got, want)


def bad_dtype(name: str, inputs: dict) -> torch.dtype:
    """A dtype the signature refuses for the tensor `name`."""
    if name == "weight":
        return next(d for d in (torch.complex64, torch.int8, torch.float64) if d not in DTYPES)
    if name in OP_DTYPE_ARGS:
        return torch.float64 if inputs["weight"].dtype != torch.float64 else torch.float32
    return torch.complex64


@pytest.mark.parametrize("device", [*DEVICES, "meta"])
@pytest.mark.parametrize("name", ["weight", "indices", "offsets"])
def test_a_wrong_dtype_is_refused_naming_it(device, name):
    # On meta tensors, the fake kernel's checks (torch.compile traces with them).
    inputs = reference_module.make_inputs(5, DTYPES[0], device)
    inputs[name] = inputs[name].to(bad_dtype(name, inputs))
    with pytest.raises(RuntimeError, match=rf"^{NAME}: {name} has dtype {inputs[name].dtype}"):
        op(**inputs)


@pytest.mark.parametrize("device", [*DEVICES, "meta"])
@pytest.mark.parametrize(
    ("name", "dims", "says"),
    [
        ("weight", 3, "it must have"),
        ("indices", 2, "it must have"),
        ("offsets", 2, "it must have"),
    ],
)
def test_a_wrong_number_of_dimensions_is_refused_naming_it(device, name, dims, says):
    inputs = reference_module.make_inputs(5, DTYPES[0], device)
    inputs[name] = torch.zeros((2,) * dims, dtype=inputs[name].dtype, device=device)
    with pytest.raises(RuntimeError, match=rf"^{NAME}: {name} has shape \[.*\]; {says}"):
        op(**inputs)


@pytest.mark.parametrize(("device", "other"), MIXED_DEVICES)
@pytest.mark.parametrize("name", ["indices", "offsets"])
def test_tensors_on_two_devices_are_refused_naming_them(device, other, name):
    inputs = reference_module.make_inputs(5, DTYPES[0], device)
    inputs[name] = inputs[name].to(other)
    with pytest.raises(RuntimeError, match=rf"^{NAME}: {name} is on {other}"):
        op(**inputs)


def leaves(inputs: dict) -> dict:
    return {
        k: v.detach().requires_grad_(k in GRAD_ARGS) if k in GRAD_ARGS else v
        for k, v in inputs.items()
    }


def differentiable(results) -> list[Tensor]:
    return [t for t in outputs(results) if t.dtype.is_floating_point and t.requires_grad]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [d for d in DTYPES if d in (torch.float32, torch.float64)])
@pytest.mark.parametrize("size", SIZES)
def test_gradients_match_reference(device, dtype, size):
    inputs = leaves(reference_module.make_inputs(size, dtype, device))
    if reference_refuses(inputs):  # test_matches_reference checks that the op refuses them
        return
    results = differentiable(op(**inputs))
    grads_out = [torch.randn_like(t) for t in results]
    actual = torch.autograd.grad(results, [inputs[k] for k in GRAD_ARGS], grads_out)
    reference_inputs = leaves(float64(inputs))
    expected_results = differentiable(reference_module.reference(**reference_inputs))
    expected = torch.autograd.grad(
        expected_results,
        [reference_inputs[k] for k in GRAD_ARGS],
        [g.double() for g in grads_out],
        allow_unused=True,
    )
    for name, got, want in zip(GRAD_ARGS, actual, expected):
        want = torch.zeros_like(got, dtype=torch.float64) if want is None else want
        # A gradient sums over the outputs an input reached, so its rounding errors grow
        # with that count: allowed, GRAD_TOLERANCES of the largest gradient.
        scale = GRAD_TOLERANCES[got.dtype] * (want.abs().max().item() if want.numel() else 0)
        torch.testing.assert_close(
            got.double(), want, rtol=tolerance(got.dtype)["rtol"], atol=scale, msg=name
        )


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    inputs = (
        leaves(reference_module.make_inputs(6, torch.float64, device))
        if torch.float64 in DTYPES
        else None
    )
    if inputs is None:
        pytest.skip("float64 is not among the op's dtypes")
    names = list(inputs)

    def f(*args):  # the differentiable outputs (gradcheck would difference the others too)
        return tuple(differentiable(op(**dict(zip(names, args)))))

    assert torch.autograd.gradcheck(f, tuple(inputs.values()))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_backward_op(device):
    inputs = reference_module.make_inputs(20, DTYPES[0], device)
    results = [t for t in outputs(op(**inputs)) if t.dtype == inputs["weight"].dtype]
    args = (*[torch.randn_like(t) for t in results], *positional(inputs))
    torch.library.opcheck(library_op("embedding_bag_backward"), args)


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward_raises_instead_of_returning_zeros(device):
    inputs = leaves(reference_module.make_inputs(6, DTYPES[0], device))
    results = differentiable(op(**inputs))
    grads = torch.autograd.grad(
        sum(t.sum() for t in results), [inputs[k] for k in GRAD_ARGS], create_graph=True
    )
    with pytest.raises(RuntimeError, match="differentiable once"):
        torch.autograd.grad(sum(g.sum() for g in grads), [inputs[k] for k in GRAD_ARGS])


@needs_cuda
def test_cuda_kernels_were_built():
    assert WITH_CUDA, "a GPU is visible but the package was built without CUDA; rebuild it"


@needs_cuda
def test_cpu_and_cuda_agree():
    inputs = reference_module.make_inputs(1000, DTYPES[0], "cpu")
    on_cuda = {k: v.cuda() if isinstance(v, Tensor) else v for k, v in inputs.items()}
    for got, want in zip(outputs(op(**on_cuda)), outputs(op(**inputs))):
        torch.testing.assert_close(got.cpu().double(), want.double(), **tolerance(got.dtype))


@needs_cuda
def test_runs_on_the_current_stream_and_device():
    # The glue sets the inputs' device and launches on the current stream: results on a
    # side stream, read after that stream's work, are right.
    inputs = reference_module.make_inputs(300, DTYPES[0], "cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        results = op(**inputs)
    stream.synchronize()
    assert_matches_reference(inputs, results)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_inputs_on_a_device_other_than_the_current_one():
    inputs = reference_module.make_inputs(300, DTYPES[0], "cuda:1")
    with torch.cuda.device(0):
        results = op(**inputs)
    assert_matches_reference(inputs, results)
    # The backward op, called directly: autograd would run it on its own thread for cuda:1.
    grads = [torch.randn_like(t) for t in outputs(results) if t.dtype == inputs["weight"].dtype]
    backward = library_op("embedding_bag_backward")
    with torch.cuda.device(0):
        actual = outputs(backward(*grads, *positional(inputs)))
    with torch.cuda.device(1):
        expected = outputs(backward(*grads, *positional(inputs)))
    for got, want in zip(actual, expected):
        assert got.device == torch.device("cuda:1")
        torch.testing.assert_close(got, want, **tolerance(got.dtype))
