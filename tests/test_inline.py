"""`opgen new NAME --inline`: one notebook-friendly file, built with load_inline."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest

from opgen.naming import MAX_LENGTH

from .conftest import long_name, render

# The settings of a project's pyproject.toml, which ruff formats the inline file with.
PROJECT_RUFF_SETTINGS = ["--isolated", "--line-length", "100", "--target-version", "py39"]


def assert_ruff_passes_on(file) -> None:
    """ruff's checks of a generated project find nothing in the file, and its formatter would
    change nothing."""
    for command in (["check", "--select", "E,F,W,I,B,UP"], ["format", "--check"]):
        result = subprocess.run([sys.executable, "-m", "ruff", *command, *PROJECT_RUFF_SETTINGS,
                                 file.name], cwd=file.parent, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def test_an_inline_op_is_one_file_that_builds_and_passes_its_self_test(tmp_path):
    project = render(tmp_path, "fused_axpby", "--inline", "--signature", "a: float, x: Tensor, b: Tensor",
                     "--forward", "a * x + b", "--gradients", "x: a * grad; b: grad")
    assert [p.name for p in project.rglob("*") if p.is_file()] == ["fused_axpby.py"]
    # Lines of 100 columns at most: the C++ strings too, clang-formatted in the project.
    assert_ruff_passes_on(project / "fused_axpby.py")

    # A wrong formula must fail the self-test: the inline file checks itself.
    source = (project / "fused_axpby.py").read_text()
    one_arch = {**os.environ, "TORCH_CUDA_ARCH_LIST": "9.0"}  # compiling the kernels, not running them
    run = subprocess.run([sys.executable, "fused_axpby.py"], cwd=project, capture_output=True,
                         text=True, timeout=900, env=one_arch)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "fused_axpby on cpu: ok" in run.stdout
    (project / "wrong.py").write_text(source.replace("return a * x + b;", "return a * x - b;"))
    # For the CPU only: the formula is the CPU kernel's too, and the self-test runs it here.
    wrong = subprocess.run([sys.executable, "wrong.py"], cwd=project, capture_output=True, text=True,
                           timeout=900, env={**os.environ, "USE_CUDA": "0"})
    assert wrong.returncode != 0 and "against the float64 reference" in wrong.stderr
    # An op defined on part of the real line: the self-test takes inputs its reference is
    # finite on (it failed on log's NaN: "error nan against the float64 reference"). log's
    # NaN below 0 and acos's beyond 1 leave (0, 1), the first range on which both are finite.
    domain = render(tmp_path, "acos_log", "--inline", "--signature", "x: Tensor", "--forward",
                    "acos(x) * log(x)", "--gradients", "x: grad * (acos(x) / x - log(x) / sqrt(1 - x * x))")
    run = subprocess.run([sys.executable, "acos_log.py"], cwd=domain, capture_output=True, text=True,
                         timeout=900, env={**os.environ, "USE_CUDA": "0"})
    assert run.returncode == 0 and "acos_log on cpu: ok" in run.stdout, run.stderr[-3000:]


def test_an_op_named_like_the_inline_files_own_code_is_refused(opgen, tmp_path):
    result = opgen("new", "self_test", "--inline", "--defaults")
    assert result.exit_code == 2
    assert "op name 'self_test' is also a name the --inline file defines" in result.output
    assert not (tmp_path / "self_test").exists()
    assert opgen("new", "self_test", "--defaults").exit_code == 0  # a project has room for it


@pytest.mark.parametrize("args", [["--kind", "pixel"], ["--kind", "matmul"],
                                  ["--no-backward", "--dtypes", "uint8", "--out-dtype", "float32"]])
def test_the_inline_file_speaks_of_itself_only(tmp_path, args):
    # Assembled from a rendered project: no file comment of a file the user does not have,
    # no second module docstring, no header guard, no file-wide noqa; ruff-clean.
    project = render(tmp_path, "nb_op", "--inline", "--defaults", *args)
    text = (project / "nb_op.py").read_text()
    for absent in (r"(?<!torch/)csrc/", "#pragma once", "noqa", r"_toolchain\.py", r"\bops\.py",
                   r"reference\.py", '#include "nb_op'):
        assert not re.search(absent, text), absent
    tree = ast.parse(text)
    docstrings = [node for node in ast.walk(tree) if isinstance(node, ast.Expr)
                  and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)]
    assert docstrings[0] is tree.body[0] and not any(d in tree.body[1:] for d in docstrings)
    assert_ruff_passes_on(project / "nb_op.py")


@pytest.mark.parametrize("args", [[], ["--kind", "pixel"], ["--kind", "matmul"]])
def test_an_inline_file_of_a_long_name_passes_ruff(tmp_path, args):
    name = long_name("fused_op", MAX_LENGTH)
    assert_ruff_passes_on(render(tmp_path, name, "--inline", "--defaults", *args) / f"{name}.py")
