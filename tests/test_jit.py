"""A generated project built at import (<OP>_JIT=1) instead of with pip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import LIGHT_OP, render

CALL = "import my_op, torch; print(my_op.my_op(torch.ones(3)).tolist(), my_op.WITH_CUDA)"


@pytest.fixture
def project(tmp_path) -> Path:
    return render(tmp_path, "my_op", *LIGHT_OP)


def jit_import(project: Path, cache: Path, code: str = CALL, **env: str) -> subprocess.Popen:
    """A fresh process that imports the project's package from its source tree."""
    return subprocess.Popen(
        [sys.executable, "-c", code], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "MY_OP_JIT": "1", "MY_OP_JIT_CACHE": str(cache),
                        "PYTHONPATH": str(project),
                        # One arch: these builds compile the kernels, they do not run them.
                        "TORCH_CUDA_ARCH_LIST": "9.0", **env},
    )


def result_of(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    return out.strip()


def test_an_edit_shows_in_a_fresh_process_and_rebuilds_only_what_changed(project, tmp_path):
    cache = tmp_path / "cache"
    first = jit_import(project, cache)
    assert result_of(first).startswith("[2.0, 2.0, 2.0]")
    # A cache hit builds nothing and says nothing about building.
    again = jit_import(project, cache)
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0 and out.startswith("[2.0, 2.0, 2.0]"), err[-2000:]
    assert "my_op: building" not in err
    (build_directory,) = cache.iterdir()
    objects = {p.name: p.stat().st_mtime_ns for p in build_directory.glob("*.o")}
    assert "my_op.o" in objects

    math = project / "csrc" / "my_op_math.h"
    math.write_text(math.read_text().replace("return alpha * x;", "return alpha * x + acc_t(1);"))
    assert result_of(jit_import(project, cache)).startswith("[3.0, 3.0, 3.0]")
    assert list(cache.iterdir()) == [build_directory]  # same torch, same flags: same directory

    kernel_objects = [name for name in objects if name.startswith("my_op_kernel")]
    if kernel_objects:  # nvcc is here: edit only the CUDA file, and only it recompiles
        before = {p.name: p.stat().st_mtime_ns for p in build_directory.glob("*.o")}
        kernel = project / "csrc" / "my_op_kernel.cu"
        kernel.write_text(kernel.read_text() + "// an edit\n")
        assert result_of(jit_import(project, cache)).startswith("[3.0, 3.0, 3.0]")
        after = {p.name: p.stat().st_mtime_ns for p in build_directory.glob("*.o")}
        assert after["my_op.o"] == before["my_op.o"]
        assert after[kernel_objects[0]] != before[kernel_objects[0]]


# The builds below are about the cache and its lock, not CUDA: for the CPU only (USE_CUDA=0).
def test_two_processes_building_at_once_both_work(project, tmp_path):
    cache = tmp_path / "cache"
    first, second = jit_import(project, cache, USE_CUDA="0"), jit_import(project, cache, USE_CUDA="0")
    assert result_of(first).startswith("[2.0, 2.0, 2.0]")
    assert result_of(second).startswith("[2.0, 2.0, 2.0]")


def test_a_lock_left_by_a_killed_build_does_not_block(project, tmp_path):
    cache = tmp_path / "cache"
    killed = jit_import(project, cache, USE_CUDA="0")
    while not cache.exists() or not any(cache.iterdir()):  # wait until it is building
        assert killed.poll() is None, killed.communicate()[1][-2000:]
    killed.kill()
    killed.wait()
    (build_directory,) = cache.iterdir()
    (build_directory / "lock").write_text("")  # what torch's own lock looks like when left
    assert result_of(jit_import(project, cache, USE_CUDA="0")).startswith("[2.0, 2.0, 2.0]")


def test_a_torch_upgrade_gets_its_own_build_directory(project, tmp_path):
    cache = tmp_path / "cache"
    result_of(jit_import(project, cache, USE_CUDA="0"))
    fake_upgrade = "import torch; torch.__version__ = '99.0.0'; " + CALL
    result_of(jit_import(project, cache, fake_upgrade, USE_CUDA="0"))
    assert len(list(cache.iterdir())) == 2
