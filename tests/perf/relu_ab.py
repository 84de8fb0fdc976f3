"""relu's CPU time against eager's at 2^16 and 2^18 elements, for one build of the relu
project: each round times the op and eager, 15 rounds, the ratio of the medians.

    python tests/perf/relu_ab.py PATH_OF_A_BUILT_RELU_PROJECT LABEL

Two builds of relu cannot be imported in one process: run this for each in turn, several
times (tests/perf/cpu_unit_steps.md).
"""

import sys, time, statistics, torch
sys.path.insert(0, sys.argv[1])
import relu as R
assert R.__file__.startswith(sys.argv[1]), R.__file__
def per(fn, n):
    fn(); t = time.perf_counter()
    for _ in range(n): fn()
    return (time.perf_counter() - t) / n * 1e6
out = []
for threads in (1, 2):
    torch.set_num_threads(threads)
    for log2, n in ((16, 3000), (18, 1000)):
        x = torch.randn(1 << log2)
        o, e = [], []
        for r in range(15):
            o.append(per(lambda: R.relu(x), n)); e.append(per(lambda: torch.relu(x), n))
        out.append(f"{threads}t 2^{log2} op/eager {statistics.median(o)/statistics.median(e):.3f}")
print(sys.argv[2], " | ".join(out))
