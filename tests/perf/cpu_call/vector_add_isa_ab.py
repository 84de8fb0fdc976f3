"""vector_add's CPU loops under AVX512 and AVX2, against eager torch.add, on one thread.

    USE_CUDA=0 python setup.py build_ext --inplace   # in a copy of reference_ops/vector_add
    python tests/perf/cpu_call/vector_add_isa_ab.py <that copy> f32|bf16 [rounds]

Runs itself once per ATEN_CPU_CAPABILITY in turn (the machine's own, then avx2), `rounds`
times (default 2): the capability is read once per process, and both the op's loops and
eager's kernels follow it. The op is called through its OpOverload's `_op`, the entry its
Python API ends in. Prints, per size, the minimum over 5 blocks of calls in µs, ours then
eager (tests/perf/cpu_direct_call.md has the results).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

SIZES_LOG2 = (12, 14, 15, 16, 17, 18, 20, 22)


def min_block_us(function, a, b, reps: int, blocks: int = 5) -> float:
    """The fastest of `blocks` runs of `reps` calls, per call."""
    best = float("inf")
    for _ in range(blocks):
        start = time.perf_counter_ns()
        for _ in range(reps):
            function(a, b)
        best = min(best, (time.perf_counter_ns() - start) / reps / 1e3)
    return best


def time_sizes(project: str, dtype_name: str) -> str:
    import torch

    sys.path.insert(0, project)
    import vector_add  # noqa: F401  (loads the library that registers the op)

    torch.set_num_threads(1)
    ours = torch.ops.vector_add.vector_add.default._op
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    cells = []
    for k in SIZES_LOG2:
        a, b = torch.randn(1 << k, dtype=dtype), torch.randn(1 << k, dtype=dtype)
        reps = max(20, min(20000, (1 << 26) >> k))  # about 2^26 elements a block
        cells.append(
            f"2^{k} {min_block_us(ours, a, b, reps):.2f} {min_block_us(torch.add, a, b, reps):.2f}"
        )
    return " | ".join(cells)


def main() -> None:
    project, dtype_name = sys.argv[1], sys.argv[2]
    if os.environ.get("ISA_AB_CHILD"):
        print(time_sizes(project, dtype_name))
        return
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    for _ in range(rounds):
        for capability in ("", "avx2"):  # "" leaves the machine's own
            env = dict(os.environ, ISA_AB_CHILD="1")
            env.pop("ATEN_CPU_CAPABILITY", None)
            if capability:
                env["ATEN_CPU_CAPABILITY"] = capability
            result = subprocess.run(
                [sys.executable, __file__, project, dtype_name],
                env=env, capture_output=True, text=True, check=True,
            )
            print(f"{capability or 'own'} {dtype_name}: {result.stdout.strip()}", flush=True)


if __name__ == "__main__":
    main()
