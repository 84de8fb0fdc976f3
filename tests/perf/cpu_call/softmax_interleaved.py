"""reference_ops/softmax's forward on the CPU against torch.softmax, interleaved: per round 10
calls of ours, then 10 of eager's; the median ratio of 21 rounds and its quartiles, and our
fastest of five blocks. One and two threads.

    cd reference_ops/softmax && USE_CUDA=0 python setup.py build_ext --inplace
    python PATH/softmax_interleaved.py LABEL
"""

import sys
import time

import softmax  # noqa: F401  (registers torch.ops.softmax)
import torch

FORWARD = torch.ops.softmax.softmax.default


def block(fn, args, calls=10):
    began = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return time.perf_counter() - began


for threads in (1, 2):
    torch.set_num_threads(threads)
    for shape in ((4096, 256), (1024, 4096), (64, 65536)):
        x = torch.randn(shape)
        r = sorted(block(FORWARD, (x,)) / block(torch.softmax, (x, -1)) for _ in range(21))
        ours = min(block(FORWARD, (x,)) for _ in range(5)) / 10 * 1e6
        print(f"{sys.argv[1]} {threads}t {shape}: forward {r[10]:.3f}x eager "
              f"(quartiles {r[5]:.3f}-{r[15]:.3f}), ours {ours:.0f} us", flush=True)
