#!/usr/bin/env python3
"""A C++ compiler for the tests' builds that parses torch's headers once per run, not per file.

The suite builds about 130 ops on CI's two cores, and most of their C++ time is GCC parsing
torch's headers again for every file that includes them: a generated `<op>_autograd.cpp`
took 35.8 s, of which 21.7 s is parsing alone, and `library.cpp`, a TORCH_LIBRARY block of a
few lines, 13 s (2-core AMD machine, 2026-12-07). So, used as CXX by conftest.pip_install,
this runs `c++` as asked, except that a file whose first directive includes torch's C++
headers (the generated glue: `<op>.cpp`, `<op>_autograd.cpp`, `library.cpp`) is compiled with
`-include` of a header of those headers, precompiled once for its exact flags and shared by
every build of the run. GCC uses a precompiled header only when it was made with the same
flags; the key is those flags, so each set (CUDA, CPU-only, debug) gets its own.

What a file compiles to is the same: its own includes follow and find the headers already
included. What this can hide is a glue file that uses a header it does not include; the
reference ops (every kind) and the default projects build without it, as users build them.
Not given to files that start with anything else: the CPU loops (`cpu_lanes.h` must come
first: it makes the file AVX2 or AVX512 code), `_C.cpp`, stable-ABI files, user kernels.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

COMPILER = "c++"
# What the generated glue includes of torch, CUDA's part only where the build has CUDA.
HEADER = """\
#include <ATen/Dispatch.h>
#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>
#ifdef WITH_CUDA
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif
"""
TORCH_FIRST = re.compile(r"#\s*include\s*<(ATen/|torch/library\.h|torch/csrc/autograd/)")
CACHE = os.environ.get("OPGEN_TESTS_PCH_DIR")


def starts_with_torch(source: str) -> bool:
    """Whether the file's first preprocessor directive includes torch's C++ headers."""
    try:
        with open(source, encoding="utf-8") as f:
            first = next((line for line in f if line.lstrip().startswith("#")), "")
    except OSError:
        return False
    return bool(TORCH_FIRST.match(first.strip()))


def header_flags(args: list[str]) -> list[str]:
    """The compile's flags less its source, object and dependency file: what shapes a header."""
    flags, skip_next = [], False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg in ("-o", "-MF"):
            skip_next = True
        elif arg not in ("-c", "-MMD") and not arg.endswith(".cpp"):
            flags.append(arg)
    return flags


def key(flags: list[str]) -> str:
    """The name of the precompiled header for these flags. An include directory without a file
    cannot change it, and GCC takes a header made with another one: each xdist worker's venv
    adds its own (`include/python3.11`, empty), which made one header a worker (45 s each)."""

    def shapes_the_header(flag: str) -> bool:
        return not flag.startswith("-I") or any(p.is_file() for p in Path(flag[2:]).rglob("*"))

    kept = [flag for flag in flags if shapes_the_header(flag)]
    return hashlib.sha256("\0".join([COMPILER, *kept]).encode()).hexdigest()[:16]


def precompiled(flags: list[str]) -> Path | None:
    """The header for these flags, precompiled beside it (made now if this is the first
    compile with them); None where that failed: the file then compiles as usual."""
    directory = Path(CACHE) / key(flags)
    directory.mkdir(parents=True, exist_ok=True)
    header, gch, failed = directory / "torch.h", directory / "torch.h.gch", directory / "failed"
    with open(directory / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one compile makes it, the others wait for it
        if not gch.exists() and not failed.exists():
            header.write_text(HEADER)
            made = directory / "making.gch"
            # Its log (torch's headers warn when compiled as the main file) stays out of the
            # build's, which tests read for warnings about the project's own files.
            with open(directory / "log", "w") as log:
                result = subprocess.run([COMPILER, *flags, "-x", "c++-header", str(header), "-o", str(made)],
                                        stdout=log, stderr=subprocess.STDOUT)
            if result.returncode == 0:
                made.rename(gch)
            else:
                failed.touch()
    return header if gch.exists() else None


def main(args: list[str]) -> None:
    sources = [arg for arg in args if arg.endswith(".cpp")]
    if CACHE and "-c" in args and len(sources) == 1 and starts_with_torch(sources[0]):
        header = precompiled(header_flags(args))
        if header:
            args = ["-include", str(header), *args]
    os.execvp(COMPILER, [COMPILER, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
