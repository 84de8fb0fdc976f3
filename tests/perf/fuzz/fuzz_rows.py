"""The rowwise reference ops on random shapes and layouts nobody wrote a test for, against
PyTorch's own functions computed in float64: forward and every gradient.

    python tests/perf/fuzz/fuzz_rows.py --trials 600 --device cuda

Needs the reference ops rms_norm, layer_norm and softmax installed (pip install
--no-build-isolation -e reference_ops/<op>). Each trial draws an op, a dtype, a row length
(around the kernels' sizes: powers of two and one off them, multiples of 8 and one off
them, up to 140000), a number of rows (0, a few, about one a multiprocessor, thousands),
leading dimensions, and a layout for each tensor: contiguous, rows padded (a row stride
longer than the row), starting 1-7 elements into a buffer (not 16-byte aligned), or
transposed (not dense along the rows). Our error against the float64 result must stay
within the dtype's tolerance or within 4 times PyTorch's own error in that dtype, whichever
is larger. Prints each mismatch and the count ("bad 0": none).
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from fuzz_common import TOLERANCE, error, run, shifted, transposed  # beside this file
from layer_norm import layer_norm
from rms_norm import rms_norm
from softmax import softmax

MAX_ELEMENTS = 1 << 25


def row_length() -> int:
    kind = random.random()
    if kind < 0.35:
        return max(1, 2 ** random.randint(0, 17) + random.choice([-1, 0, 0, 1]))
    if kind < 0.6:
        return max(1, 8 * random.randint(1, 4096) + random.choice([-1, 0, 1]))
    return random.choice(
        [
            random.randint(1, 64),
            random.randint(65, 4096),
            random.randint(4097, 20000),
            random.randint(20001, 140000),
        ]
    )


def rows_for(n: int) -> int:
    rows = random.choice([0, 1, 2, 3, 5, 8, 33, 127, 132, 133, 264, 1000, 2049, 4096, 8191])
    return min(rows, MAX_ELEMENTS // n)


def laid_out(t: torch.Tensor) -> tuple[torch.Tensor, str]:
    """t's values in another memory layout (the same values)."""
    kind = random.random()
    if kind < 0.4 or t.numel() == 0:
        return t, "contiguous"
    if kind < 0.6 and t.dim() >= 2:
        pad = random.choice([1, 3, 8, 64])
        wide = torch.empty((*t.shape[:-1], t.shape[-1] + pad), dtype=t.dtype, device=t.device)
        wide[..., : t.shape[-1]] = t
        return wide[..., : t.shape[-1]], f"rows padded by {pad}"
    if kind < 0.85:
        return shifted(t)
    if t.dim() >= 2:
        return transposed(t)
    return t, "contiguous"


def call(op: str, x, w, b, eps: float, ours: bool):
    if op == "rms_norm":
        return rms_norm(x, w, eps) if ours else F.rms_norm(x, [x.shape[-1]], w, eps)
    if op == "layer_norm":
        return layer_norm(x, w, b, eps) if ours else F.layer_norm(x, [x.shape[-1]], w, b, eps)
    return softmax(x) if ours else torch.softmax(x, -1)


def trial(device: str, index: int) -> list[str]:
    op = random.choice(["rms_norm", "layer_norm", "softmax"])
    dtype = random.choice(list(TOLERANCE))
    n = row_length()
    rows = rows_for(n)
    lead = [rows]
    if rows > 1 and random.random() < 0.3:  # (a, b, n): leading dimensions that multiply to rows
        a = random.choice([d for d in range(1, 9) if rows % d == 0])
        lead = [a, rows // a]
    x64 = torch.randn(*lead, n, dtype=torch.float64, device=device) * random.choice([1, 1, 30])
    w64 = torch.randn(n, dtype=torch.float64, device=device)
    b64 = torch.randn(n, dtype=torch.float64, device=device)
    eps = random.choice([1e-6, 1e-5, 0.1])
    (x, x_layout), (w, w_layout), (b, b_layout) = (laid_out(t.to(dtype)) for t in (x64, w64, b64))
    where = f"#{index} {op} {dtype} {tuple(x.shape)} x {x_layout}, weight {w_layout}, bias {b_layout}"
    # The float64 truth from the very values the op gets, and PyTorch's own error in dtype.
    inputs = [t.detach().double().requires_grad_() for t in (x, w, b)]
    want = call(op, *inputs, eps, ours=False)
    torch_inputs = [t.detach().clone().requires_grad_() for t in (x, w, b)]
    torch_out = call(op, *torch_inputs, eps, ours=False)
    our_inputs = [t.detach().requires_grad_() for t in (x, w, b)]
    try:
        got = call(op, *our_inputs, eps, ours=True)
    except Exception as failure:  # noqa: BLE001  (every failure is a finding)
        return [f"RAISED {where}: {failure}"]
    found = []
    allowed = max(TOLERANCE[dtype], 4 * error(torch_out, want))
    if got.shape != want.shape or got.dtype != dtype:
        return [f"SHAPE {where}: {tuple(got.shape)} {got.dtype}"]
    if error(got, want) > allowed:
        found.append(f"WRONG {where}: error {error(got, want):.3g} > {allowed:.3g}")
    if got.numel() and random.random() < 0.5:
        grad = torch.randn_like(want)
        names = ["x", "weight", "bias"][: {"rms_norm": 2, "layer_norm": 3, "softmax": 1}[op]]
        expected = torch.autograd.grad(want, inputs[: len(names)], grad)
        theirs = torch.autograd.grad(torch_out, torch_inputs[: len(names)], grad.to(dtype))
        try:
            ours = torch.autograd.grad(got, our_inputs[: len(names)], grad.to(dtype))
        except Exception as failure:  # noqa: BLE001
            return found + [f"RAISED backward {where}: {failure}"]
        for name, o, t, e in zip(names, ours, theirs, expected, strict=True):
            # Column gradients sum over the rows: PyTorch's error in dtype grows with them too.
            allowed = max(TOLERANCE[dtype], 4 * error(t, e))
            if o.shape != e.shape or error(o, e) > allowed:
                found.append(f"WRONG grad {name} {where}: error {error(o, e):.3g} > {allowed:.3g}")
    return found


def main() -> None:
    run(__doc__, 600, trial)


if __name__ == "__main__":
    main()
