"""The API's direct eager call on CUDA: host time of small calls of reference_ops/relu
through its Python function (now: the C++ operator behind the OpOverload), through the
OpOverload itself (what the function called before), and of eager torch.relu; forward,
and forward + backward of `op(x).sum()`. Back-to-back calls, the GPU synchronized after
each batch of 2000; medians of 15 batches.

    cd reference_ops/relu && python setup.py build_ext --inplace && cd -
    PYTHONPATH=reference_ops/relu python tests/perf/direct_call_cuda.py
"""

import statistics
import time

import torch
from relu import relu

overload = torch.ops.relu.relu.default


def per_call_us(fn, calls=2000):
    fn()
    torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - began) / calls * 1e6


def backward_of(op, x):
    def run():
        op(x).sum().backward()

    return run


print(torch.cuda.get_device_name(), torch.__version__)
for log2 in (10, 16):
    x = torch.randn(1 << log2, device="cuda")
    xg = x.clone().requires_grad_()
    cells = {
        "relu.relu fwd": lambda: relu(x),
        "OpOverload fwd": lambda: overload(x),
        "torch.relu fwd": lambda: torch.relu(x),
        "relu.relu fwd+bwd": backward_of(relu, xg),
        "OpOverload fwd+bwd": backward_of(overload, xg),
        "torch.relu fwd+bwd": backward_of(torch.relu, xg),
    }
    times = {name: [] for name in cells}
    for _ in range(15):
        for name, fn in cells.items():
            times[name].append(per_call_us(fn))
    print(f"2^{log2} float32: " + " | ".join(f"{n} {statistics.median(t):.2f} us" for n, t in times.items()))
