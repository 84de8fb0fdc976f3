"""Can the API call the C++ operator with no is_compiling() check, torch.compile tracing the
OpOverload in its place (torch.compiler.substitute_in_graph)? It compiles and differentiates,
but importing the decorator's modules costs 1.5-2 s (tests/perf/cpu_direct_call.md).

    python tests/perf/cpu_call/substitute_in_graph.py PATH_OF_A_BUILT_RELU_PROJECT
"""

import sys
import time
import timeit

import torch

sys.path.insert(0, sys.argv[1])
import relu  # noqa: E402  (the build named on the command line)

op = torch.ops.relu.relu.default
cpp = op._op

began = time.perf_counter()


@torch.compiler.substitute_in_graph(cpp, skip_signature_check=True)
def _traced(x):
    return op(x)


print(f"registering (imports Dynamo): {time.perf_counter() - began:.2f} s")


def unchecked_relu(x):
    """relu without the check: the C++ operator, which torch.compile replaces by the op."""
    return cpp(x)


x = torch.randn(5, requires_grad=True)
y = torch.compile(unchecked_relu, fullgraph=True)(x)
y.sum().backward()
assert torch.equal(y, torch.relu(x)) and torch.equal(x.grad, (x > 0).float())
inlined = torch.compile(lambda t: unchecked_relu(t) * 2, fullgraph=True)
assert torch.equal(inlined(x), torch.relu(x) * 2)
print("compiled, called directly and inlined: correct, gradients too")

torch.set_num_threads(1)
one = torch.randn(1)
for name, fn in {
    "without the check": lambda: unchecked_relu(one),
    "relu.relu": lambda: relu.relu(one),
    "torch.relu": lambda: torch.relu(one),
}.items():
    us = min(timeit.repeat(fn, number=5000, repeat=15)) / 5000 * 1e6
    print(f"{name:20s} {us:.3f} us")
