"""The erf GELU of erf_gelu.py's docstring against eager, interleaved (a busy 2-core machine
moves eager's own time by 1.5x between runs): per round 20 calls of ours, then 20 of eager's,
the ratio of the two; the median ratio over 15 rounds, and each side's fastest round. One and
two threads, 2^16 to 2^22 elements.

    cd my_gelu && python PATH/erf_gelu_interleaved.py LABEL
"""

import statistics
import sys
import time

import my_gelu  # noqa: F401  (registers torch.ops.my_gelu)
import torch

FORWARD = torch.ops.my_gelu.my_gelu.default
BACKWARD = torch.ops.my_gelu.my_gelu_backward.default
F = torch.nn.functional


def block(fn, args, calls=20):
    began = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return time.perf_counter() - began


def ratio(ours, eager, args):
    block(ours, args), block(eager, args)
    ratios, times = [], []
    for _ in range(15):
        a, b = block(ours, args), block(eager, args)
        ratios.append(a / b)
        times.append((a / 20 * 1e6, b / 20 * 1e6))
    return statistics.median(ratios), min(t[0] for t in times), min(t[1] for t in times)


label = sys.argv[1]
for threads in (1, 2):
    torch.set_num_threads(threads)
    for log2 in (16, 18, 20, 22):
        x, g = torch.randn(1 << log2), torch.randn(1 << log2)
        f = ratio(FORWARD, F.gelu, (x,))
        b = ratio(BACKWARD, torch.ops.aten.gelu_backward, (g, x))
        print(f"{label} {threads}t 2^{log2}: forward {f[0]:.2f}x eager ({f[1]:.0f} vs {f[2]:.0f} us), "
              f"backward {b[0]:.2f}x ({b[1]:.0f} vs {b[2]:.0f} us)", flush=True)
