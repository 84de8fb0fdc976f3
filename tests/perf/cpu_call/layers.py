"""What one CPU call of relu costs, layer by layer, against eager's torch.relu: one element,
one thread, the minimum over 15 rounds of 5000 calls (tests/perf/cpu_direct_call.md).

    python tests/perf/cpu_call/layers.py PATH_OF_A_BUILT_RELU_PROJECT
"""

import sys
import timeit

import torch

sys.path.insert(0, sys.argv[1])
import relu  # noqa: E402  (the build named on the command line)

torch.set_num_threads(1)
x = torch.randn(1)
ours = torch.ops.relu.relu.default._op
eagers = torch.ops.aten.relu.default._op
candidates = {
    "torch.relu": lambda: torch.relu(x),
    "aten relu _op": lambda: eagers(x),
    "relu _op": lambda: ours(x),
    "relu.relu": lambda: relu.relu(x),
    "is_compiling": torch.compiler.is_compiling,
    "torch.empty_like": lambda: torch.empty_like(x),
}
for name, fn in candidates.items():
    us = min(timeit.repeat(fn, number=5000, repeat=15)) / 5000 * 1e6
    print(f"{name:20s} {us:.3f} us")
