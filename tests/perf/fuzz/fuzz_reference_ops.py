"""The elementwise, pixel, matmul and custom reference ops on random shapes and layouts
nobody wrote a test for, against the PyTorch code each one documents (tests/
test_reference_ops.py's DOCUMENTED_CALLS), forward and gradients.

    python tests/perf/fuzz/fuzz_reference_ops.py --trials 300 --device cuda

Needs the reference ops installed (pip install --no-build-isolation -e reference_ops/<op>
for times_two, vector_add, relu, fused_axpby, gelu, silu_mul, matmul, rgb_to_gray,
normalize_volume, embedding_bag). Each trial draws an op, a dtype and shapes (empty,
one element, odd sizes, broadcasts where the op takes them), and a layout for each tensor:
contiguous, starting 1-7 elements into a buffer (not 16-byte aligned), every other element
of a buffer, or transposed. Floating results must be within the dtype's tolerance of the
float64 result, or within 4 times PyTorch's own error in that dtype; integer results as
test_reference_ops allows (one step below for a truncation). Prints each mismatch and the
count ("bad 0": none).
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from embedding_bag import embedding_bag
from fused_axpby import fused_axpby
from fuzz_common import TOLERANCE, error, run, shifted, transposed  # beside this file
from gelu import gelu
from matmul import matmul
from normalize_volume import normalize_volume
from relu import relu
from rgb_to_gray import rgb_to_gray
from silu_mul import silu_mul
from times_two import times_two
from vector_add import vector_add

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

# op: (ours, PyTorch's, how many tensors, whether they broadcast)
ELEMENTWISE = {
    "times_two": (times_two, lambda x: 2 * x, 1),
    "relu": (relu, lambda x: torch.clamp(x, min=0), 1),
    "gelu": (gelu, lambda x: F.gelu(x, approximate="tanh"), 1),
    "vector_add": (vector_add, lambda a, b: a + b, 2),
    "silu_mul": (silu_mul, lambda x, y: F.silu(x) * y, 2),
}


def shape(most: int = 1 << 22, dims: int = 4) -> list[int]:
    """Up to `dims` sizes, of at most `most` elements in all."""
    while True:
        sizes = [
            random.choice([0, 1, 2, 3, 5, 17, 64, 127, 1000]) if random.random() < 0.9 else 4099
            for _ in range(random.randint(0, dims))
        ]
        if torch.Size(sizes).numel() <= most:
            return sizes


def laid_out(t: torch.Tensor) -> tuple[torch.Tensor, str]:
    """t's values in another memory layout (the same values)."""
    kind = random.random()
    if kind < 0.35 or t.numel() == 0:
        return t, "contiguous"
    if kind < 0.6:
        return shifted(t)
    if kind < 0.8:
        buffer = torch.empty(t.numel() * 2, dtype=t.dtype, device=t.device)
        view = buffer.as_strided(t.shape, [2 * s for s in t.contiguous().stride()])
        view.copy_(t)
        return view, "every other"
    if t.dim() >= 2:
        return transposed(t)
    return t, "contiguous"


def compare(where: str, ours, theirs, inputs, dtype, grads: bool) -> list[str]:
    """ours(*inputs) against theirs in float64, and theirs in dtype as the error allowed;
    with gradients of every input when grads."""
    exact = [t.detach().double().requires_grad_(grads) for t in inputs]
    in_dtype = [t.detach().clone().requires_grad_(grads) for t in inputs]
    mine = [t.detach().requires_grad_(grads) for t in inputs]
    want = theirs(*exact)
    try:  # PyTorch in dtype: the error it allows (some of its CPU kernels lack the half types)
        rounded = theirs(*in_dtype)
    except RuntimeError:
        rounded = None
    try:
        got = ours(*mine)
    except Exception as failure:  # noqa: BLE001  (every failure is a finding)
        return [f"RAISED {where}: {failure}"]
    if got.shape != want.shape or got.dtype != dtype:
        return [f"SHAPE {where}: {tuple(got.shape)} {got.dtype}, want {tuple(want.shape)} {dtype}"]
    found = []
    allowed = max(TOLERANCE[dtype], 4 * error(rounded, want) if rounded is not None else 0)
    if error(got, want) > allowed:
        found.append(f"WRONG {where}: error {error(got, want):.3g} > {allowed:.3g}")
    if grads and got.numel():
        grad = torch.randn_like(want)
        expected = torch.autograd.grad(want, exact, grad)
        try:
            theirs_g = torch.autograd.grad(rounded, in_dtype, grad.to(dtype))
        except (RuntimeError, TypeError):  # no result in dtype, or no backward for it
            theirs_g = [None] * len(exact)
        try:
            ours_g = torch.autograd.grad(got, mine, grad.to(dtype))
        except Exception as failure:  # noqa: BLE001
            return found + [f"RAISED backward {where}: {failure}"]
        for i, (o, t, e) in enumerate(zip(ours_g, theirs_g, expected, strict=True)):
            allowed = max(TOLERANCE[dtype], 4 * error(t, e) if t is not None else 0)
            if o.shape != e.shape or error(o, e) > allowed:
                found.append(f"WRONG grad {i} {where}: error {error(o, e):.3g} > {allowed:.3g}")
    return found


def elementwise(device: str, index: int) -> list[str]:
    name = random.choice([*ELEMENTWISE, "fused_axpby"])
    dtype = random.choice(FLOATS)
    full = shape()
    count = 2 if name == "fused_axpby" else ELEMENTWISE[name][2]
    # Each tensor of the full shape or broadcast to it (trailing dimensions, some of them 1).
    shapes = [full] + [
        [d if random.random() < 0.7 else 1 for d in full][random.randint(0, len(full)) :]
        for _ in range(count - 1)
    ]
    random.shuffle(shapes)
    tensors, layouts = [], []
    for s in shapes:
        t, how = laid_out(torch.randn(s, dtype=torch.float64, device=device).to(dtype))
        tensors.append(t)
        layouts.append(how)
    where = f"#{index} {name} {dtype} {[tuple(t.shape) for t in tensors]} {layouts}"
    if name == "fused_axpby":
        a = random.uniform(-2, 2)
        return compare(where, lambda x, b: fused_axpby(a, x, b), lambda x, b: a * x + b, tensors, dtype, True)
    ours, theirs, _ = ELEMENTWISE[name]
    return compare(where, ours, theirs, tensors, dtype, True)


def matmuls(device: str, index: int) -> list[str]:
    dtype = random.choice(FLOATS)
    m, k, n = (random.choice([0, 1, 2, 7, 16, 33, 64, 100, 255, 513, 1024]) for _ in range(3))
    (a, la), (b, lb) = (
        laid_out(torch.randn(s, dtype=torch.float64, device=device).to(dtype)) for s in ((m, k), (k, n))
    )
    where = f"#{index} matmul {dtype} ({m}, {k}) {la} @ ({k}, {n}) {lb}"
    return compare(where, matmul, lambda x, y: x @ y, [a, b], dtype, random.random() < 0.5)


def pixels(device: str, index: int) -> list[str]:
    found = []
    lead = shape(1 << 20, dims=3)
    img, how = laid_out(torch.randint(0, 256, (*lead, 3), device=device).to(torch.uint8))
    got = rgb_to_gray(img)
    want = 0.299 * img[..., 0].double() + 0.587 * img[..., 1].double() + 0.114 * img[..., 2].double()
    if (
        got.shape != want.shape
        or got.dtype != torch.uint8
        or (got.numel() and ((got.double() - want.floor()).abs().max() > 1))
    ):
        found.append(f"WRONG #{index} rgb_to_gray {tuple(img.shape)} {how}")
    vol, how = laid_out(torch.randint(0, 65536, lead or [1], device=device).to(torch.uint16))
    max_val = random.choice([65535.0, 1.0, 300.5])
    got = normalize_volume(vol, max_val)
    want = vol.double() / max_val
    if got.shape != want.shape or (got.numel() and error(got, want) > 2e-6):
        found.append(f"WRONG #{index} normalize_volume {tuple(vol.shape)} {how} {max_val}")
    return found


def bags(device: str, index: int) -> list[str]:
    dtype = random.choice(FLOATS)
    rows, dim = random.choice([1, 10, 1000]), random.choice([1, 3, 64, 129])
    count, bag_count = random.choice([0, 1, 8, 1000]), random.choice([1, 2, 5, 300])
    weight, how = laid_out(torch.randn(rows, dim, dtype=torch.float64, device=device).to(dtype))
    indices = torch.randint(0, rows, (count,), device=device)
    # Increasing offsets from 0, empty bags included.
    offsets = torch.sort(torch.randint(0, count + 1, (bag_count,), device=device)).values
    offsets[0] = 0
    where = f"#{index} embedding_bag {dtype} weight ({rows}, {dim}) {how}, {count} indices, {bag_count} bags"
    return compare(
        where,
        lambda w: embedding_bag(w, indices, offsets),
        lambda w: F.embedding_bag(indices, w, offsets, mode="sum"),
        [weight],
        dtype,
        random.random() < 0.5,
    )


def trial(device: str, index: int) -> list[str]:
    return random.choice([elementwise, elementwise, matmuls, pixels, bags])(device, index)


def main() -> None:
    run(__doc__, 300, trial)


if __name__ == "__main__":
    main()
