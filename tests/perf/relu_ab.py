"""relu's CPU time against eager's at 2^16 and 2^18 elements, for one build of the relu
project: each round times the op and eager, 15 rounds, the ratio of the medians.

    python tests/perf/relu_ab.py PATH_OF_A_BUILT_RELU_PROJECT LABEL

Two builds of relu cannot be imported in one process: run this for each in turn, several
times (tests/perf/cpu_unit_steps.md).
"""

import statistics
import sys
import time

import torch

sys.path.insert(0, sys.argv[1])
import relu  # noqa: E402  (the build named on the command line)

assert relu.__file__.startswith(sys.argv[1]), relu.__file__


def per_call_us(fn, x, calls: int) -> float:
    fn(x)
    began = time.perf_counter()
    for _ in range(calls):
        fn(x)
    return (time.perf_counter() - began) / calls * 1e6


cells = []
for threads in (1, 2):
    torch.set_num_threads(threads)
    for log2, calls in ((16, 3000), (18, 1000)):
        x = torch.randn(1 << log2)
        ours, eager = [], []
        for _ in range(15):
            ours.append(per_call_us(relu.relu, x, calls))
            eager.append(per_call_us(torch.relu, x, calls))
        cells.append(f"{threads}t 2^{log2} op/eager {statistics.median(ours) / statistics.median(eager):.3f}")
print(sys.argv[2], " | ".join(cells))
