"""A debug build (<OP>_DEBUG=1): built apart from the release build, with debug information,
and on a GPU, cuda-gdb stops at a line of its kernel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from .conftest import HAS_NVCC, pip_install, run_project_tests

RELU = Path(__file__).resolve().parent.parent / "reference_ops" / "relu"
CALL = "import relu, torch; print(relu.DEBUG_BUILD, relu.relu(torch.tensor([-1.0, 2.0])).tolist())"


def jit_run(project: Path, cache: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """python ARGS in the project's source tree, the package built at import (RELU_JIT=1)."""
    return subprocess.run(
        [sys.executable, *args], cwd=project, capture_output=True, text=True, timeout=1200,
        # One arch: these builds compile the kernels, they do not run them.
        env={**os.environ, "RELU_JIT": "1", "RELU_JIT_CACHE": str(cache), "PYTHONPATH": str(project),
             "TORCH_CUDA_ARCH_LIST": "9.0", **env},
    )


def section_names(library: Path) -> set[str]:
    listing = subprocess.run(["readelf", "-S", "--wide", str(library)], capture_output=True,
                             text=True, check=True).stdout
    return {word for word in listing.split() if word.startswith(".")}


def build_flags(build_directory: Path) -> dict[str, str]:
    """The cflags and cuda_cflags lines of a JIT build's build.ninja."""
    lines = (build_directory / "build.ninja").read_text().splitlines()
    return {key: line for line in lines for key in ("cflags", "cuda_cflags")
            if line.startswith(key + " = ")}


def test_a_debug_build_is_kept_apart_from_the_release_build_and_can_be_debugged(tmp_path):
    project, cache = tmp_path / "relu", tmp_path / "cache"
    shutil.copytree(RELU, project, ignore=shutil.ignore_patterns("build", "*.so"))

    release = jit_run(project, cache, "-c", CALL)
    assert release.returncode == 0, release.stderr[-3000:]
    assert release.stdout.split() == ["False", "[0.0,", "2.0]"]
    debug = jit_run(project, cache, "-c", CALL, RELU_DEBUG="1")
    assert debug.returncode == 0, debug.stderr[-3000:]
    assert debug.stdout.split() == ["True", "[0.0,", "2.0]"]
    assert "relu: debug build (RELU_DEBUG=1): building" in debug.stderr

    # Two build directories, told apart by their flags.
    directories = {"-O0" in build_flags(d)["cflags"]: d for d in cache.iterdir()}
    assert len(directories) == 2 == len(list(cache.iterdir()))
    debug_flags, release_flags = build_flags(directories[True]), build_flags(directories[False])
    assert "-O0 -g" in debug_flags["cflags"] and "-O3 -g0" in release_flags["cflags"]
    if HAS_NVCC:
        assert "-G -g -O0" in debug_flags["cuda_cflags"]
        assert "-O3 -lineinfo" in release_flags["cuda_cflags"]
    assert ".debug_info" in section_names(directories[True] / "relu_jit.so")
    assert ".debug_info" not in section_names(directories[False] / "relu_jit.so")

    # Back to the release build: loaded from its own directory, nothing rebuilt.
    again = jit_run(project, cache, "-c", CALL)
    assert again.returncode == 0 and again.stdout.startswith("False"), again.stderr[-3000:]
    assert "building" not in again.stderr

    # The debug build passes the project's own tests (-O0 code: the same results).
    tests = jit_run(project, cache, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                    "-k", "not compile", RELU_DEBUG="1")
    assert tests.returncode == 0, tests.stdout[-3000:]


def cuda_gdb() -> str | None:
    """cuda-gdb on PATH, else beside nvcc."""
    nvcc = shutil.which("nvcc")
    beside_nvcc = Path(nvcc).resolve().parent / "cuda-gdb" if nvcc else None
    return shutil.which("cuda-gdb") or (str(beside_nvcc) if beside_nvcc and beside_nvcc.exists() else None)


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="cuda-gdb stops in a kernel only on a GPU, and none is visible here")
def test_cuda_gdb_stops_at_a_line_of_the_kernel_in_a_debug_build(python, tmp_path):
    project = tmp_path / "relu"
    shutil.copytree(RELU, project, ignore=shutil.ignore_patterns("build", "*.so"))
    log = pip_install(python, project, as_users_build=True, RELU_DEBUG="1")
    assert "relu: debug build (RELU_DEBUG=1): building CUDA kernels" in log
    debugger = cuda_gdb()
    assert debugger, "the CUDA toolkit that built the kernels has no cuda-gdb"

    # A line of the forward kernel, as the README tells a user to pick one.
    lines = (project / "csrc" / "relu_kernel.cu").read_text().splitlines()
    kernel = next(i for i, line in enumerate(lines) if "forward_kernel(" in line)
    line = next(i for i in range(kernel, len(lines)) if "const int64_t n_vec" in lines[i]) + 1
    call = "import torch, relu; relu.relu(torch.ones(1000, device='cuda')); torch.cuda.synchronize()"
    session = subprocess.run(
        [debugger, "-batch", "-ex", "set breakpoint pending on", "-ex", f"break relu_kernel.cu:{line}",
         "-ex", "run", "-ex", "print n", "-ex", "info cuda kernels", "-ex", "kill",
         "--args", str(python), "-c", call],
        cwd=project, capture_output=True, text=True, timeout=600,
    )
    output = session.stdout + session.stderr
    assert f"relu_kernel.cu:{line}" in output and "hit Breakpoint 1" in output, output[-4000:]
    assert "$1 = 1000" in output, output[-4000:]  # the kernel's own argument, read at the stop

    # The debug build's kernels compute what the release build's do.
    tests = run_project_tests(python, project, "-x", "-k", "cuda and not compile")
    assert tests.returncode == 0, tests.stdout[-3000:]
