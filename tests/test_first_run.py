"""What a newcomer meets first: a build in a fresh environment, and build settings gone wrong.

Each refusal is one line from the generated setup.py that names the setting and the fix,
before anything compiles, instead of a traceback from setuptools or torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from .conftest import render


def build_in_place(project: Path, python: str = sys.executable, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([python, "setup.py", "build_ext", "--inplace"], cwd=project,
                          capture_output=True, text=True, env={**os.environ, **env})


def error_lines(output: str, name: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if line.strip().startswith(f"{name}: error:")]


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("TORCH_CUDA_ARCH_LIST", "8.0;12.7", "TORCH_CUDA_ARCH_LIST='8.0;12.7': '12.7' is not an arch this "
                                             "nvcc builds; give entries such as '8.0;9.0+PTX'"),
        ("TORCH_CUDA_ARCH_LIST", "sm_90", "TORCH_CUDA_ARCH_LIST='sm_90': 'sm_90' is not an arch"),
        ("CXX", "/no/such/g++", "CXX='/no/such/g++' does not run (No such file or directory); set CXX to "
                                "a C++ compiler, e.g. CXX=/usr/bin/g++, or unset it"),
        ("CXX", "false", "CXX='false' does not run (--version exits with 1)"),
    ],
)
def test_a_bad_build_setting_is_one_line_naming_it(tmp_path, variable, value, says):
    project = render(tmp_path, "my_op")
    result = build_in_place(project, **{variable: value})
    assert result.returncode != 0
    (line,) = error_lines(result.stderr, "my_op")
    assert line.startswith(f"my_op: error: {says}")
    assert "Traceback" not in result.stderr
    assert not list((project / "my_op").glob("_C*.so"))


def test_a_fresh_virtual_environment_is_told_what_to_install(tmp_path):
    # What a newcomer's new venv has: pip and (on Python 3.11) setuptools 65, which cannot
    # build wheels by itself; no torch.
    project = render(tmp_path, "my_op")
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = str(environment / "bin" / "python")
    install = [python, "-m", "pip", "install", "-q", "--no-build-isolation", "-e", str(project)]
    has_setuptools = subprocess.run([python, "-c", "import setuptools"]).returncode == 0
    if has_setuptools:
        old = subprocess.run([python, "-c", "import setuptools; print(setuptools.__version__)"],
                             capture_output=True, text=True).stdout.strip()
        if tuple(map(int, old.split(".")[:2])) < (70, 1):
            result = subprocess.run(install, capture_output=True, text=True)
            assert result.returncode != 0
            (line,) = error_lines(result.stdout + result.stderr, "my_op")
            assert line == (f"my_op: error: setuptools {old} in {python} cannot build wheels; pip install "
                            "'setuptools>=70.1', then pip install --no-build-isolation -e . again")
    # As the message says: a setuptools that builds wheels. torch is still missing.
    subprocess.run([python, "-m", "pip", "install", "-q", "setuptools>=70.1"], check=True)
    result = subprocess.run(install, capture_output=True, text=True)
    assert result.returncode != 0
    (line,) = error_lines(result.stdout + result.stderr, "my_op")
    assert line == (f"my_op: error: torch is not installed in {python}; install it first "
                    "(pip install torch ninja), then pip install --no-build-isolation -e .")
