"""Times the Lanes prototype (torch.ops.proto.ln and .sm), the generated scalar loops (pr.ln,
pr.sm) and eager, medians of 15 calls, with each one's largest error against float64 relative to
the largest value. run.sh builds the project and runs this in it.
"""

import time

import pr
import torch
import torch.nn.functional as F


def median_ms(f, calls=15):
    f()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return sorted(times)[calls // 2] * 1e3


def error(got, want):
    return ((got.double() - want).abs().max() / want.abs().max()).item()


def compare(x, w, b) -> str:
    """Both ops' three implementations on rows x (weight w, bias b): times and errors."""
    proto, n = torch.ops.proto, x.shape[-1:]
    line = ""
    for name, lanes, scalar, eager, ref in (
        (
            "ln",
            lambda: proto.ln(x, w, b, 1e-5),
            lambda: pr.ln(x, w, b),
            lambda: F.layer_norm(x, n, w, b, 1e-5),
            F.layer_norm(x.double(), n, w.double(), b.double(), 1e-5),
        ),
        (
            "sm",
            lambda: proto.sm(x),
            lambda: pr.sm(x),
            lambda: torch.softmax(x, -1),
            torch.softmax(x.double(), -1),
        ),
    ):
        t_lanes, t_scalar, t_eager = median_ms(lanes), median_ms(scalar), median_ms(eager)
        line += (
            f" | {name} lanes {t_lanes:7.2f} ms scalar {t_scalar:7.2f} eager {t_eager:7.2f}"
            f" (eager/lanes {t_eager / t_lanes:4.2f}) err {error(lanes(), ref):.1e}"
            f" vs {error(scalar(), ref):.1e}"
        )
    return line


for dtype in (torch.float32, torch.bfloat16):
    for shape in ((4096, 4096), (256, 16384), (65536, 64), (8, 131072), (33, 4099)):
        x = torch.randn(shape, dtype=dtype)
        w, b = torch.randn(shape[-1], dtype=dtype), torch.randn(shape[-1], dtype=dtype)
        print(f"{str(dtype)[6:]:9s} {str(shape):14s}" + compare(x, w, b), flush=True)
