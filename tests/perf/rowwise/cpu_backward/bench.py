"""Rowwise ops' forward + backward on the CPU against eager PyTorch (medians of 9 calls, ms).

    opgen new lsm --op ln --kind rowwise --preset layernorm --defaults && cd lsm
    opgen add sm --kind rowwise --preset softmax --defaults
    opgen add rms --kind rowwise --preset rmsnorm --defaults
    USE_CUDA=0 python setup.py build_ext --inplace
    PYTHONPATH=. python tests/perf/rowwise/cpu_backward/bench.py   # from opgen's checkout, or by path

The ratio is eager's time over ours: above 1, ours is faster.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from lsm import ln, rms, sm


def median_ms(fn, reps: int = 9) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[reps // 2] * 1e3


def main() -> None:
    torch.manual_seed(0)
    print(f"threads {torch.get_num_threads()}, torch {torch.__version__}, "
          f"capability {torch.backends.cpu.get_cpu_capability()}")
    for dtype in (torch.float32, torch.bfloat16):
        for rows, n in ((4096, 4096), (256, 16384), (65536, 64)):
            x = torch.randn(rows, n, dtype=dtype, requires_grad=True)
            w = (1 + 0.1 * torch.randn(n, dtype=dtype)).requires_grad_()
            b = (0.1 * torch.randn(n, dtype=dtype)).requires_grad_()
            g = torch.randn(rows, n, dtype=dtype)
            cases = (
                ("rms_norm", lambda: rms(x, w), lambda: F.rms_norm(x, (n,), w, 1e-6), (x, w)),  # noqa: B023
                ("layer_norm", lambda: ln(x, w, b), lambda: F.layer_norm(x, (n,), w, b, 1e-5), (x, w, b)),  # noqa: B023
                ("softmax", lambda: sm(x), lambda: torch.softmax(x, -1), (x,)),  # noqa: B023
            )
            for name, ours, eager, args in cases:
                both = median_ms(lambda: torch.autograd.grad(ours(), args, g))  # noqa: B023
                both_eager = median_ms(lambda: torch.autograd.grad(eager(), args, g))  # noqa: B023
                with torch.no_grad():
                    forward, forward_eager = median_ms(ours), median_ms(eager)
                print(f"{name:10s} {str(dtype)[6:]:9s} {rows}x{n}: fwd+bwd ours {both:7.2f} eager "
                      f"{both_eager:7.2f} ({both_eager / both:.2f}) | fwd ours {forward:6.2f} eager "
                      f"{forward_eager:6.2f} ({forward_eager / forward:.2f})", flush=True)


if __name__ == "__main__":
    main()
