"""relu's CPU time against eager's at 2^16 and 2^18 elements, for one build of the relu
project: each round times the op and eager, 15 rounds, the ratio of the medians.

    python tests/perf/relu_ab.py PATH_OF_A_BUILT_RELU_PROJECT LABEL

Two builds of relu cannot be imported in one process: run this for each in turn, several
times (tests/perf/cpu_unit_steps.md). tests/perf/relu_sizes.py times more sizes with the
same helpers.
"""

import importlib
import statistics
import sys
import time

import torch


def import_relu(path: str):
    """The relu package of the build at path."""
    sys.path.insert(0, path)
    relu = importlib.import_module("relu")
    assert relu.__file__.startswith(path), relu.__file__
    return relu


def per_call_us(fn, x, calls: int) -> float:
    fn(x)
    began = time.perf_counter()
    for _ in range(calls):
        fn(x)
    return (time.perf_counter() - began) / calls * 1e6


def main() -> None:
    relu = import_relu(sys.argv[1])
    cells = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for log2, calls in ((16, 3000), (18, 1000)):
            x = torch.randn(1 << log2)
            ours, eager = [], []
            for _ in range(15):
                ours.append(per_call_us(relu.relu, x, calls))
                eager.append(per_call_us(torch.relu, x, calls))
            ratio = statistics.median(ours) / statistics.median(eager)
            cells.append(f"{threads}t 2^{log2} op/eager {ratio:.3f}")
    print(sys.argv[2], " | ".join(cells))


if __name__ == "__main__":
    main()
