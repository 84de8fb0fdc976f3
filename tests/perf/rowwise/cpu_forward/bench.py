"""The rowwise forwards on the CPU: the vector loops against the scalar ones and eager.

    bash tests/perf/rowwise/cpu_forward/run.sh      # renders and builds the project, then this

Times, in one run on this machine, three generated ops (the layernorm, softmax and
add_rmsnorm presets of `opgen new --kind rowwise`) three ways: as built (the vector loops of
csrc/<op>_cpu_loops.h where the CPU has AVX2 or AVX512), with ATEN_CPU_CAPABILITY=default (the
scalar loops of csrc/<op>.cpp, which were the only ones before; in a process of its own, as
the variable is read once), and PyTorch eager (F.layer_norm, torch.softmax, F.rms_norm of
x + residual), at the capability the machine has. Medians of 15 calls after one, in ms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import torch

SHAPES = [(4096, 4096), (256, 16384), (65536, 64), (8, 131072)]
DTYPES = [torch.float32, torch.bfloat16]


def median_ms(call, reps: int = 15) -> float:
    call()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2] * 1e3


def calls(package, x, residual, weight, bias):
    """Each op's call on rows x: ours (package) or eager (package None)."""
    n = x.shape[-1]
    if package is None:
        return {"layer_norm": lambda: torch.nn.functional.layer_norm(x, [n], weight, bias),
                "softmax": lambda: torch.softmax(x, -1),
                "add_rms_norm": lambda: torch.nn.functional.rms_norm(x + residual, [n], weight)}
    return {"layer_norm": lambda: package.ln(x, weight, bias), "softmax": lambda: package.sm(x),
            "add_rms_norm": lambda: package.arms(x, residual, weight)}


def times(package) -> dict:
    result = {}
    for dtype in DTYPES:
        for rows, n in SHAPES:
            torch.manual_seed(0)
            x, residual = torch.randn(rows, n, dtype=dtype), torch.randn(rows, n, dtype=dtype)
            weight, bias = torch.randn(n, dtype=dtype), torch.randn(n, dtype=dtype)
            for op, call in calls(package, x, residual, weight, bias).items():
                result[f"{op} {str(dtype)[6:]} {rows}x{n}"] = median_ms(call)
    return result


def main() -> None:
    import rw

    if sys.argv[1:] == ["--scalar-child"]:
        print(json.dumps(times(rw)))
        return
    child = subprocess.run([sys.executable, __file__, "--scalar-child"], capture_output=True, text=True,
                           env={**os.environ, "ATEN_CPU_CAPABILITY": "default"}, check=True)
    scalar = json.loads(child.stdout.strip().splitlines()[-1])
    vector, eager = times(rw), times(None)
    print(f"torch {torch.__version__}, capability {torch.backends.cpu.get_cpu_capability()}, "
          f"{torch.get_num_threads()} threads; ms, medians of 15")
    header = ("op dtype shape", "vector", "scalar", "eager", "scalar/vector", "eager/vector")
    print(f"{header[0]:34} {header[1]:>9} {header[2]:>9} {header[3]:>9} {header[4]:>14} {header[5]:>13}")
    for key in vector:
        print(f"{key:34} {vector[key]:9.2f} {scalar[key]:9.2f} {eager[key]:9.2f} "
              f"{scalar[key] / vector[key]:14.2f} {eager[key] / vector[key]:13.2f}")


if __name__ == "__main__":
    main()
