"""relu's CPU time against eager's (torch.relu) by size, one and two threads: the ratio of the
medians of 11 rounds of calls (< 1: the op is faster).

    python tests/perf/relu_sizes.py PATH_OF_A_BUILT_RELU_PROJECT

Two builds of relu cannot be imported in one process: run this for each in turn, several times.
"""

import statistics
import sys

import torch
from relu_ab import import_relu, per_call_us  # beside this file


def main() -> None:
    relu = import_relu(sys.argv[1])
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for log2 in (0, 10, 14, 16, 18):
            x = torch.randn(1 << log2)
            calls = min(20000, max(200, 200000 >> max(0, log2 - 8)))
            ours, eager = [], []
            for _ in range(11):
                ours.append(per_call_us(relu.relu, x, calls))
                eager.append(per_call_us(torch.relu, x, calls))
            o, e = statistics.median(ours), statistics.median(eager)
            print(f"{threads}t 2^{log2}: ours {o:.2f} eager {e:.2f} ratio {o / e:.3f}", flush=True)


if __name__ == "__main__":
    main()
