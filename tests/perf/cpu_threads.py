"""CPU time of an elementwise op against eager, per thread count and CPU capability.

    python tests/perf/cpu_threads.py reference_ops/gelu gelu "torch.nn.functional.gelu(x, approximate='tanh')"

Runs itself once per ATEN_CPU_CAPABILITY (the machine's own, then avx2 where it has
AVX512): eager's kernels follow that variable, and so do the op's AVX2 loops.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def median_us(function, x, repeats: int = 50) -> float:
    for _ in range(5):
        function(x)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(x)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1e6


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
                ours, theirs = median_us(op, x), median_us(eager, x)
                print(f"  {threads:3d} threads {str(dtype)[6:]:9s} 2^{log2}: op {ours:10.1f} us  "
                      f"eager {theirs:10.1f} us  op/eager {ours / theirs:5.2f}", flush=True)


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
