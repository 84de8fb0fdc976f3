"""The erf GELU written as a formula, on the CPU, against eager's F.gelu, torch.erf alone and
aten's gelu_backward: medians of 30 single calls, one and two threads.

    opgen new my_gelu --defaults --signature "x: Tensor" \\
        --forward "0.5 * x * (1 + erf(x * 0.7071067811865476))" \\
        --reference "torch.nn.functional.gelu(x)" \\
        --gradients "x: grad * (0.5 * (1 + erf(x * 0.7071067811865476))
                     + x * 0.3989422804014327 * exp(-0.5 * x * x))"      # one line
    cd my_gelu && pip install --no-build-isolation -e . && python PATH/erf_gelu.py
"""

import statistics
import time

import my_gelu  # noqa: F401  (registers torch.ops.my_gelu)
import torch

F = torch.nn.functional
FORWARD = torch.ops.my_gelu.my_gelu.default
BACKWARD = torch.ops.my_gelu.my_gelu_backward.default


def median_us(fn, *args, calls: int = 30) -> float:
    fn(*args)
    times = []
    for _ in range(calls):
        began = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e6


print(torch.__version__, torch.backends.cpu.get_cpu_capability())
for threads in (1, 2):
    torch.set_num_threads(threads)
    for log2 in (16, 20):
        x, g = torch.randn(1 << log2), torch.randn(1 << log2)
        ours, eager, erf = median_us(FORWARD, x), median_us(F.gelu, x), median_us(torch.erf, x)
        ours_b, eager_b = median_us(BACKWARD, g, x), median_us(torch.ops.aten.gelu_backward, g, x)
        print(
            f"{threads}t 2^{log2}: forward ours {ours:.0f} us, eager F.gelu {eager:.0f} "
            f"({ours / eager:.2f}x its time), torch.erf alone {erf:.0f}; "
            f"backward ours {ours_b:.0f}, eager {eager_b:.0f} ({ours_b / eager_b:.2f}x)"
        )
