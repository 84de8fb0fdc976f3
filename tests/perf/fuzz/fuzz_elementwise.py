"""A three-input elementwise op against eager on random shapes, broadcasts, strides, offsets,
stride-0 inputs and dtypes, forward and (float64) gradients. The op, rendered and built first:

    opgen new fz --signature "x: Tensor, y: Tensor, z: Tensor, k: float = 0.5, n: int = 3" \
        --forward "x > y ? x * k + n : tanh(y) * z" \
        --reference "torch.where(x > y, x * k + n, torch.tanh(y) * z)" \
        --gradients "x: x > y ? grad * k : 0; y: x > y ? 0 : grad * z * (1 - tanh(y) * tanh(y)); \
z: x > y ? 0 : grad * tanh(y)"
    cd fz && USE_CUDA=0 pip install --no-build-isolation -e . && python PATH/fuzz_elementwise.py
    python PATH/fuzz_elementwise.py cuda     # the same on the GPU (a build with its kernels)

(from a directory where `fz` is the installed package, not the project folder). Prints each
mismatch and the count ("bad 0": none).
"""

import random
import sys

import torch
from fz import fz

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"
torch.manual_seed(0)
random.seed(0)
TOLERANCES = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def ref(x, y, z, k=0.5, n=3):
    return torch.where(x > y, x * k + n, torch.tanh(y) * z)


def layout(t):
    """t as it is, transposed in memory, channels_last, every other element of a buffer
    that starts at an odd offset, or a view."""
    r = random.random()
    if r < 0.2 and t.dim() >= 2:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if r < 0.35 and t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if r < 0.5:
        buffer = torch.empty(t.numel() * 2 + 3, dtype=t.dtype, device=t.device)[3:3 + t.numel() * 2:2]
        return torch.as_strided(buffer, t.shape, [s * 2 for s in t.contiguous().stride()]).copy_(t)
    return t


def operand(shape):
    s = [d if random.random() < 0.7 else 1 for d in shape]
    s = s[random.randint(0, len(s)):] if random.random() < 0.3 else s
    t = torch.randn(s, dtype=torch.float64, device=DEVICE)
    if random.random() < 0.2 and t.numel() > 0:
        t = t.flatten()[:1].reshape([1] * t.dim()).expand(s)  # stride 0
    return t


bad = 0
for _ in range(600):
    shape = [random.choice([0, 1, 2, 3, 5, 17]) if random.random() < 0.9 else 64
             for _ in range(random.randint(0, 4))]
    dtype = random.choice(list(TOLERANCES))
    a, b, c = operand(shape), operand(shape), operand(shape)
    k, n = random.uniform(-2, 2), random.randint(-3, 3)
    try:
        ref(a, b, c, k, n)
    except RuntimeError:  # shapes that do not broadcast
        continue
    args = [layout(t.to(dtype)) if 0 not in t.stride() else t.to(dtype) for t in (a, b, c)]
    try:
        got = fz(*args, k, n)
    except Exception as error:
        print("raised", [tuple(t.shape) for t in args], [t.stride() for t in args], dtype, error)
        bad += 1
        continue
    want = ref(*[t.double() for t in args], k, n)
    tol = TOLERANCES[dtype]
    if got.shape != want.shape or not torch.allclose(got.double(), want, atol=tol * 8, rtol=tol * 2,
                                                     equal_nan=True):
        print("WRONG", [tuple(t.shape) for t in args], [t.stride() for t in args], dtype)
        bad += 1
    if dtype == torch.float64 and random.random() < 0.3 and got.numel() > 0:
        ins = [t.detach().clone().requires_grad_() for t in args]
        g = torch.randn_like(got)
        ours = torch.autograd.grad(fz(*ins, k, n), ins, g)
        ins2 = [t.detach().clone().requires_grad_() for t in args]
        eager = torch.autograd.grad(ref(*ins2, k, n), ins2, g)
        if not all(torch.allclose(u, v, atol=1e-10) for u, v in zip(ours, eager, strict=True)):
            print("WRONG GRAD", [tuple(t.shape) for t in args], [t.stride() for t in args])
            bad += 1
print(DEVICE, "bad", bad)
