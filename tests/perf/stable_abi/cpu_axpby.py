"""fused_axpby on the CPU: reference_ops/fused_axpby (torch's ABI) against
reference_ops/fused_axpby_stable, both built with USE_CUDA=0. Results: cpu_2core.md."""

import statistics
import time

import fused_axpby
import fused_axpby_stable
import torch


def median_us(fn, reps=30):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        began = time.perf_counter()
        fn()
        times.append((time.perf_counter() - began) * 1e6)
    return statistics.median(times)


def eager(a, x, b):
    return a * x + b


print("| dtype | elements | torch ABI us | stable ABI us | eager us | stable / torch |")
for dtype in (torch.float32, torch.bfloat16):
    for log2 in (16, 20, 22):
        x, b = torch.randn(1 << log2, dtype=dtype), torch.randn(1 << log2, dtype=dtype)
        ops = (fused_axpby.fused_axpby, fused_axpby_stable.fused_axpby, eager)
        r = [median_us(lambda f=f, x=x, b=b: f(0.75, x, b)) for f in ops]
        print(f"| {str(dtype)[6:]} | 2^{log2} | {r[0]:.1f} | {r[1]:.1f} | {r[2]:.1f} | {r[1] / r[0]:.2f} |")
