"""gelu on the CPU, built on torch's ABI (AVX2 loops) and on the stable ABI (scalar loops).

Packages gelu_t and gelu_s: reference_ops/gelu rendered again under those package names,
with abi torch and abi stable, each built with USE_CUDA=0. Results: cpu_2core.md.
"""

import statistics
import time

import gelu_s
import gelu_t
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


def eager(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
      f"{torch.backends.cpu.get_cpu_capability()}")
print("| dtype | elements | torch ABI us | stable ABI us | eager us | stable / torch "
      "| fwd+bwd torch / stable / eager |")
for dtype in (torch.float32, torch.bfloat16):
    for log2 in (16, 20, 22):
        x = torch.randn(1 << log2, dtype=dtype)
        xg = x.clone().requires_grad_()
        ops = (gelu_t.gelu, gelu_s.gelu, eager)
        forward = [median_us(lambda f=f, x=x: f(x)) for f in ops]
        both = [median_us(lambda f=f, x=x, xg=xg: torch.autograd.grad(f(xg), xg, x), 15) for f in ops]
        print(f"| {str(dtype)[6:]} | 2^{log2} | {forward[0]:.1f} | {forward[1]:.1f} | {forward[2]:.1f} "
              f"| {forward[1] / forward[0]:.2f} | {both[0]:.0f} / {both[1]:.0f} / {both[2]:.0f} |")
