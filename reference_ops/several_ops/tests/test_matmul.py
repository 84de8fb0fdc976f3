"""Tests of matmul on every available device and every supported dtype.

Values are checked against a PyTorch reference evaluated in float64, gradients against
autograd of that reference and gradcheck, the registration with torch.library.opcheck,
and torch.compile against eager. NaN where the reference is NaN is a match.
If the op is defined only on part of the real line (log, sqrt, ...), edit make_inputs().
"""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from several_ops import WITH_CUDA
from several_ops import matmul as op
from several_ops import matmul_reference as reference_module

from .conftest import DEVICES, MIXED_DEVICES, needs_cuda

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def library_op(name: str):
    """torch.ops.several_ops.<name>, the op of that name that the library registers."""
    return getattr(torch.ops.several_ops, name).default


# Allowed error of each output element relative to sum over l of |a[i, l] b[l, j]|:
# products accumulate in float (double for float64), and the result rounds once.
TOLERANCES = {
    torch.float64: 1e-12,
    torch.float32: 1e-5,
    torch.float16: 2e-3,
    torch.bfloat16: 1.6e-2,
}
# (M, K, N): tile multiples, one element, and sizes that no tile divides; the last three
# have K and N multiples of 8, which the half types compute on tensor cores (compute
# capability 8.0 and up), the others on CUDA cores.
SHAPES = [
    (1, 1, 1),
    (64, 64, 64),
    (33, 65, 17),
    (128, 7, 129),
    (5, 300, 3),
    (200, 100, 150),
    (1, 8, 8),
    (33, 40, 24),
    (130, 264, 136),
]


def make_matrices(m, k, n, dtype, device, requires_grad=False) -> tuple[Tensor, Tensor]:
    a = torch.randn(m, k, dtype=torch.float64).to(dtype=dtype, device=device)
    b = torch.randn(k, n, dtype=torch.float64).to(dtype=dtype, device=device)
    return a.requires_grad_(requires_grad), b.requires_grad_(requires_grad)


def assert_is_the_product(out: Tensor, a: Tensor, b: Tensor) -> None:
    a64, b64 = a.detach().double(), b.detach().double()
    expected = reference_module.reference(a64, b64)
    assert out.shape == expected.shape and out.dtype == a.dtype and out.device == a.device
    assert out.is_contiguous()
    bound = TOLERANCES[a.dtype] * (a64.abs() @ b64.abs()) + 1e-30
    error = (out.double() - expected).abs()
    assert bool((error <= bound).all()), f"max error {error.max().item()} over the bound"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_float64_reference(device, dtype, shape):
    a, b = make_matrices(*shape, dtype, device)
    assert_is_the_product(op(a, b), a, b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_strided_and_offset_views(device, dtype):
    a_t, _ = make_matrices(70, 50, 1, dtype, device)
    b_t, _ = make_matrices(40, 70, 1, dtype, device)
    a, b = a_t.t()[:, 1:], b_t.t()[1:]  # a: 50×69 read down columns, b: 69×40 with an offset
    assert not a.is_contiguous() and b.storage_offset() > 0
    assert_is_the_product(op(a, b), a, b)
    a2, b2 = make_matrices(66, 40, 30, dtype, device)
    assert_is_the_product(op(a2[::2], b2), a2[::2], b2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
# (9, 0, 16): K = 0 with N a multiple of 8, the tensor-core path of the half types.
@pytest.mark.parametrize("shape", [(0, 5, 3), (4, 5, 0), (4, 0, 3), (9, 0, 16)], ids=str)
def test_empty_matrices_and_an_empty_inner_dimension(device, dtype, shape):
    a, b = make_matrices(*shape, dtype, device, requires_grad=True)
    out = op(a, b)
    assert out.shape == (shape[0], shape[2])
    assert bool((out == 0).all())  # a sum over nothing
    grad_a, grad_b = torch.autograd.grad(out.sum(), (a, b))
    assert grad_a.shape == a.shape and grad_b.shape == b.shape
    assert_is_the_product(grad_a, torch.ones_like(out), b.t())
    assert_is_the_product(grad_b, a.t(), torch.ones_like(out))


def test_meta_tensors_give_the_output_shape_and_dtype():
    # Meta tensors have shapes but no data: the op's fake kernel (register_fake) answers, as it does
    # when torch.compile traces the op.
    a, b = make_matrices(4, 5, 3, DTYPES[0], "meta")
    out = op(a, b)
    assert out.device.type == "meta"
    assert out.shape == (4, 3) and out.dtype == DTYPES[0]


def test_a_backend_without_a_kernel_is_refused_naming_the_op():
    # Kernels exist for CPU, CUDA and Meta tensors only. Any other backend (MPS, XPU, CUDA
    # in a build without CUDA; sparse tensors here) is refused by the dispatcher.
    says = "Could not run 'several_ops::matmul' with arguments from the 'SparseCPU'"
    with pytest.raises(NotImplementedError, match=says):
        op(torch.ones(4, 5).to_sparse(), torch.ones(5, 3).to_sparse())


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    # Schema, fake kernel, autograd registration and dispatch, checked by PyTorch itself.
    a, b = make_matrices(5, 7, 3, DTYPES[0], device, requires_grad=True)
    torch.library.opcheck(library_op("matmul"), (a, b))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph_matches_eager(device):
    def loss(a, b):
        return (op(a, b) * 3).sum()

    a, b = make_matrices(40, 30, 20, DTYPES[0], device, requires_grad=True)
    torch._dynamo.reset()
    # fullgraph=True fails on any graph break: the op must trace as one node.
    compiled = torch.compile(loss, fullgraph=True)
    torch.testing.assert_close(compiled(a, b), loss(a, b), rtol=1e-4, atol=1e-3)
    for actual, expected in zip(
        torch.autograd.grad(compiled(a, b), (a, b)), torch.autograd.grad(loss(a, b), (a, b))
    ):
        torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_match_float64_reference(device, dtype):
    a, b = make_matrices(33, 65, 17, dtype, device, requires_grad=True)
    out = op(a, b)
    grad = torch.randn_like(out)
    grad_a, grad_b = torch.autograd.grad(out, (a, b), grad)
    # da = grad @ bᵀ and db = aᵀ @ grad: products themselves, with the same bounds.
    assert_is_the_product(grad_a, grad, b.t())
    assert_is_the_product(grad_b, a.t(), grad)


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_records_the_op_only_when_a_gradient_is_needed(device):
    # The autograd kernel goes straight to the kernel when neither matrix requires grad or
    # grad mode is off (what keeps small calls fast); whenever either one requires grad it
    # must record the op, and that matrix's gradient must be right.
    a, b = make_matrices(6, 5, 4, DTYPES[0], device)
    out = op(a, b)
    assert not out.requires_grad and out.grad_fn is None
    grad = torch.randn_like(out)
    x, y = a.clone().requires_grad_(), b.clone()
    with torch.no_grad():
        assert op(x, y).grad_fn is None
    (grad_a,) = torch.autograd.grad(op(x, y), x, grad)
    assert_is_the_product(grad_a, grad, b.t())
    x, y = a.clone(), b.clone().requires_grad_()
    (grad_b,) = torch.autograd.grad(op(x, y), y, grad)
    assert_is_the_product(grad_b, a.t(), grad)


@pytest.mark.parametrize("device", DEVICES)
def test_forward_mode_ad_is_refused_not_dropped(device):
    # There is no forward-mode formula: a dual input must raise, never give a result
    # without its tangent.
    import torch.autograd.forward_ad as forward_ad

    a, b = make_matrices(3, 4, 2, DTYPES[0], device)
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(a, torch.ones_like(a))
        with pytest.raises(RuntimeError, match="jvp is not implemented"):
            op(dual, b)


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward_raises_instead_of_returning_zeros(device):
    # The backward op has no derivative of its own: differentiating it (hessian,
    # gradgradcheck, create_graph=True) must raise, never give zeros.
    a, b = make_matrices(3, 4, 2, DTYPES[0], device, requires_grad=True)
    out = op(a, b)
    grads = torch.autograd.grad((out * out).sum(), (a, b), create_graph=True)
    with pytest.raises(RuntimeError, match=f"{op.__name__} is differentiable once"):
        torch.autograd.grad(sum(g.sum() for g in grads), (a, b), allow_unused=True)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    a, b = make_matrices(4, 6, 5, torch.float64, device, requires_grad=True)
    assert torch.autograd.gradcheck(op, (a, b))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_backward_op(device):
    a, b = make_matrices(5, 7, 3, DTYPES[0], device)
    grad = torch.randn(5, 3, dtype=DTYPES[0], device=device)
    torch.library.opcheck(library_op("matmul_backward"), (grad, a, b))


@pytest.mark.parametrize("device", DEVICES)
def test_backward_op_rejects_bad_arguments_naming_them(device):
    backward = library_op("matmul_backward")
    a, b = make_matrices(4, 5, 3, DTYPES[0], device)
    grad = torch.randn(4, 3, dtype=DTYPES[0], device=device)
    says = rf"{op.__name__}_backward: grad has shape \[4, 2\] and bᵀ has shape \[3, 5\]"
    with pytest.raises(RuntimeError, match=says):
        backward(grad[:, :2], a, b)
    says = rf"{op.__name__}_backward: aᵀ has shape \[5, 4\] and grad has shape \[3, 3\]"
    with pytest.raises(RuntimeError, match=says):
        backward(grad[:3], a, b)
    with pytest.raises(RuntimeError, match=f"{op.__name__}_backward: grad has dtype torch.int32"):
        backward(grad.to(torch.int32), a, b)


@pytest.mark.parametrize("device", DEVICES)
def test_rejects_bad_matrices_naming_the_argument(device):
    a, b = make_matrices(4, 5, 3, DTYPES[0], device)
    with pytest.raises(RuntimeError, match=r"b must be a 2-D matrix, got shape \[5\]"):
        op(a, b[:, 0])
    with pytest.raises(RuntimeError, match=r"a must be a 2-D matrix, got shape \[\]"):
        op(a[0, 0], b)
    with pytest.raises(RuntimeError, match=r"the columns of a must match the rows of b"):
        op(a, b[:4])
    with pytest.raises(RuntimeError, match=r"b has dtype torch.int32"):
        op(a, torch.ones(5, 3, dtype=torch.int32, device=device))
    if len(DTYPES) > 1:
        with pytest.raises(RuntimeError, match=f"b has dtype {DTYPES[1]}"):
            op(a, b.to(DTYPES[1]))


@pytest.mark.parametrize("first, last", MIXED_DEVICES)
def test_rejects_mixed_devices_naming_the_argument(first, last):
    a, b = make_matrices(4, 5, 3, DTYPES[0], first)
    with pytest.raises(RuntimeError, match=f"b is on {last}.* but a is on {first}"):
        op(a, b.to(last))


@needs_cuda
def test_cuda_kernels_were_built():
    assert WITH_CUDA, "built without CUDA: rebuild where nvcc is found"


@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1031, 1025, 1029), (1031, 1032, 1040)], ids=str)
def test_large_matrices_on_cuda(dtype, shape):
    # The second shape takes the tensor-core kernel for the half types.
    a, b = make_matrices(*shape, dtype, "cuda")
    assert_is_the_product(op(a, b), a, b)


@needs_cuda
def test_more_row_tiles_than_one_grid_dimension_holds():
    # 65535 blocks at most along a grid's y dimension, 64 rows each: the launcher splits
    # taller products.
    a, b = make_matrices(65535 * 64 + 65, 3, 2, DTYPES[0], "cuda")
    out = op(a, b)
    for rows in (slice(0, 64), slice(65535 * 64 - 64, 65535 * 64 + 64), slice(-65, None)):
        assert_is_the_product(out[rows], a[rows], b)


@needs_cuda
def test_runs_on_the_current_stream():
    a, b = make_matrices(300, 200, 100, DTYPES[0], "cuda")
    new_a, new_b = make_matrices(300, 200, 100, DTYPES[0], "cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        # The stream is busy, then writes new inputs: a kernel launched on any other stream
        # runs at once and reads the old ones.
        torch.cuda._sleep(100_000_000)
        a.copy_(new_a)
        b.copy_(new_b)
        out = op(a, b)
    stream.synchronize()
    assert_is_the_product(out, new_a, new_b)


@needs_cuda
def test_captured_in_a_cuda_graph():
    a, b = make_matrices(70, 80, 90, DTYPES[0], "cuda")
    op(a, b)  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = op(a, b)
    a.copy_(torch.randn_like(a))
    graph.replay()
    torch.cuda.synchronize()
    assert_is_the_product(out, a, b)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_inputs_on_a_device_other_than_the_current_one():
    a, b = make_matrices(65, 33, 17, DTYPES[0], "cuda:1")
    with torch.cuda.device(0):
        out = op(a, b)
    assert out.device == torch.device("cuda:1")
    assert_is_the_product(out, a, b)
    # The backward op, called directly: autograd would run it on its own thread for cuda:1.
    grad = torch.randn(65, 17, dtype=DTYPES[0], device="cuda:1")
    backward = library_op("matmul_backward")
    with torch.cuda.device(0):
        grad_a, grad_b = backward(grad, a, b)
    assert grad_a.device == grad_b.device == torch.device("cuda:1")
    assert_is_the_product(grad_a, grad, b.t())
    assert_is_the_product(grad_b, a.t(), grad)
