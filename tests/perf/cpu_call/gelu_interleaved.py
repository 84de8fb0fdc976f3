"""A GELU written as a formula (the erf GELU of erf_gelu.py's docstring, or the tanh GELU of
run_exp_device.sh's) against eager, interleaved (a busy 2-core machine moves eager's own time
by 1.5x between runs): per round 20 calls of ours, then 20 of eager's, the ratio of the two;
the median ratio over 15 rounds, and each side's fastest round. One and two threads, 2^16 to
2^22 elements.

    cd my_gelu && python PATH/gelu_interleaved.py my_gelu none LABEL
    cd my_tgelu && python PATH/gelu_interleaved.py my_tgelu tanh LABEL
"""

import functools
import importlib
import statistics
import sys
import time

import torch

package, approximate, label = sys.argv[1:4]
importlib.import_module(package)  # registers torch.ops.<package>
FORWARD = getattr(getattr(torch.ops, package), package).default
BACKWARD = getattr(getattr(torch.ops, package), package + "_backward").default
EAGER = functools.partial(torch.nn.functional.gelu, approximate=approximate)
EAGER_BACKWARD = functools.partial(torch.ops.aten.gelu_backward, approximate=approximate)


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


for threads in (1, 2):
    torch.set_num_threads(threads)
    for log2 in (16, 18, 20, 22):
        x, g = torch.randn(1 << log2), torch.randn(1 << log2)
        f = ratio(FORWARD, EAGER, (x,))
        b = ratio(BACKWARD, EAGER_BACKWARD, (g, x))
        print(f"{label} {threads}t 2^{log2}: forward {f[0]:.2f}x eager ({f[1]:.0f} vs {f[2]:.0f} us), "
              f"backward {b[0]:.2f}x ({b[1]:.0f} vs {b[2]:.0f} us)", flush=True)
