"""CPU time of an elementwise op against eager, forward and forward + backward, per thread
count and CPU capability.

    python tests/perf/cpu_threads.py reference_ops/gelu gelu "torch.nn.functional.gelu(x, approximate='tanh')"

Runs itself once per ATEN_CPU_CAPABILITY (the machine's own, then avx2 where it has
AVX512): eager's kernels follow that variable, and so do the op's vector loops (AVX512, AVX2).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def paired_medians_us(ours, theirs, x, seconds: float = 0.4) -> tuple[float, float]:
    """Median times of ours(x) and theirs(x), called in turn, so that a shared host's drift
    (other jobs, clocks) falls on both alike; as many pairs as fit in `seconds`, 5 to 50."""
    for _ in range(3):
        ours(x), theirs(x)
    start = time.perf_counter()
    ours(x), theirs(x)
    pairs = max(5, min(50, int(seconds / (time.perf_counter() - start))))
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(pairs):
        for function, kept in ((ours, times[0]), (theirs, times[1])):
            start = time.perf_counter()
            function(x)
            kept.append(time.perf_counter() - start)
    return tuple(sorted(kept)[len(kept) // 2] * 1e6 for kept in times)


def forward_and_backward(function, grad):
    """function(x) and the gradient of x for `grad`, as training calls them."""
    import torch

    def run(x):
        return torch.autograd.grad(function(x), x, grad)

    return run


def measure(project: str, op_name: str, eager_text: str) -> None:
    import torch

    sys.path.insert(0, project)
    op = getattr(__import__(op_name), op_name)
    eager = eval(f"lambda x: {eager_text}", {"torch": torch})  # noqa: S307 (a benchmark argument)
    print(f"capability {torch.backends.cpu.get_cpu_capability()}, torch {torch.__version__}")
    for threads in sorted({1, 2, os.cpu_count()}):
        torch.set_num_threads(threads)
        for dtype in (torch.float32, torch.bfloat16):
            for log2 in (16, 20, 24):
                x = torch.randn(1 << log2, dtype=dtype)
                ours, theirs = paired_medians_us(op, eager, x)
                x.requires_grad_(True)
                grad = torch.randn_like(x)
                ours_bwd, theirs_bwd = paired_medians_us(forward_and_backward(op, grad),
                                                         forward_and_backward(eager, grad), x)
                print(f"  {threads:3d} threads {str(dtype)[6:]:9s} 2^{log2}: op {ours:10.1f} us  "
                      f"eager {theirs:10.1f} us  op/eager {ours / theirs:5.2f}  |  fwd+bwd op "
                      f"{ours_bwd:10.1f} us  eager {theirs_bwd:10.1f} us  op/eager "
                      f"{ours_bwd / theirs_bwd:5.2f}", flush=True)


if __name__ == "__main__":
    if os.environ.get("CPU_THREADS_CHILD"):
        measure(*sys.argv[1:4])
    else:
        import torch

        settings = [None] + (["avx2"] if torch.backends.cpu.get_cpu_capability() == "AVX512" else [])
        for capability in settings:
            env = {**os.environ, "CPU_THREADS_CHILD": "1"}
            if capability:
                env["ATEN_CPU_CAPABILITY"] = capability
            subprocess.run([sys.executable, __file__, *sys.argv[1:4]], env=env, check=True)
