"""Rows that take the streaming kernel (row_kernel_stream): many rows that would each need a
cluster of 4 or more blocks (2048 x 50304), rows no cluster holds (96 x 600001: its odd length
read element by element, backward with weight and bias gradients too), and an unaligned view
(256 x 50304 starting one element into its rows). layer_norm, rms_norm and softmax, bfloat16
and float32: the forward and every gradient against torch's (float64, from the same
inputs), then the forward's and forward + backward's medians as a fraction of a copy.

    PYTHONPATH=reference_ops/layer_norm:reference_ops/rms_norm:reference_ops/softmax \\
        python tests/perf/rowwise/check_stream_rows.py [--no-bench] [--label NAME]

`--ops layer_norm,rms_norm` checks (and imports) those ops only; `--shapes 4096x16384+0,300x16384+1`
other rows x columns (+ the offset into a wider row), checks only.
"""

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rowwise import bench  # noqa: E402


def option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def our_op(name):
    """The built reference op `name` (imported only when asked for)."""
    return getattr(__import__(name), name)


OPS = {
    "layer_norm": (lambda x, w, b: our_op("layer_norm")(x, w, b),
                   lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b, 1e-5)),
    "rms_norm": (lambda x, w, b: our_op("rms_norm")(x, w),
                 lambda x, w, b: F.rms_norm(x, x.shape[-1:], w, 1e-6)),
    "softmax": (lambda x, w, b: our_op("softmax")(x), lambda x, w, b: torch.softmax(x, -1)),
}
OPS = {name: OPS[name] for name in option("--ops", ",".join(OPS)).split(",")}


def inputs(rows, n, dtype, offset=0):
    x = (torch.randn(rows, n + offset, device="cuda") * 2 + 0.5).to(dtype)[:, offset:]
    w = (torch.randn(n, device="cuda") * 0.5 + 1).to(dtype)
    b = torch.randn(n, device="cuda").to(dtype)
    return x, w, b


def differentiable(name, tensors):
    """The ones of (x, weight, bias) that op `name` takes."""
    return [t for t, used in zip(tensors, (True, name != "softmax", name == "layer_norm")) if used]


def relative_error(got, want):
    return ((got.double() - want).norm() / want.norm().clamp_min(1e-30)).item()


def check(name, rows, n, dtype, offset):
    ours, ref = OPS[name]
    x, w, b = inputs(rows, n, dtype, offset)
    leaves = [t.detach().requires_grad_() for t in (x, w, b)]
    y = ours(*leaves)
    grad = torch.randn_like(y)
    got = torch.autograd.grad(y, differentiable(name, leaves), grad)
    exact = [t.detach().double().requires_grad_() for t in (x, w, b)]
    y_ref = ref(*exact)
    want = torch.autograd.grad(y_ref, differentiable(name, exact), grad.double())
    tol = 2e-2 if dtype == torch.bfloat16 else 2e-5
    errors = [relative_error(y, y_ref)] + [relative_error(g, r) for g, r in zip(got, want)]
    status = "ok" if max(errors) < tol else "WRONG"
    print(f"{name:>10} {str(dtype)[6:]:>8} {rows}x{n} offset {offset}: relative errors "
          + " ".join(f"{e:.1e}" for e in errors) + f"  {status}", flush=True)
    return status == "ok"


def timings(label):
    for dtype in (torch.bfloat16, torch.float32):
        rows, n = 2048, 50304
        x, w, b = inputs(rows, n, dtype)
        dst = torch.empty_like(x)
        copy = bench(lambda: dst.copy_(x))
        for name, (ours, _) in OPS.items():
            leaves = [t.detach().requires_grad_() for t in (x, w, b)]
            used = differentiable(name, leaves)
            grad = torch.randn_like(x)
            fwd = bench(lambda: ours(x, w, b))
            both = bench(lambda: torch.autograd.grad(ours(*leaves), used, grad))
            print(f"{label:>8} {name:>10} {str(dtype)[6:]:>8} {rows}x{n}: fwd {fwd:7.1f} us "
                  f"({copy / fwd:.3f} of copy)  fwd+bwd {both:7.1f} us  copy {copy:6.1f} us", flush=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    ok = True
    shapes = ((2048, 50304, 0), (96, 600001, 0), (256, 50304, 1))
    if "--shapes" in sys.argv:
        shapes = [tuple(int(v) for v in shape.replace("+", "x").split("x"))
                  for shape in option("--shapes", "").split(",")]
    for rows, n, offset in shapes:
        for dtype in (torch.bfloat16, torch.float32):
            for name in OPS:
                ok = check(name, rows, n, dtype, offset) and ok
    if "--no-bench" not in sys.argv and "--shapes" not in sys.argv:
        timings(option("--label", ""))
    sys.exit(0 if ok else 1)
