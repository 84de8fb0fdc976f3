"""`opgen new NAME --inline`: one notebook-friendly file, built with load_inline."""

from __future__ import annotations

import subprocess
import sys

from .conftest import render


def test_an_inline_op_is_one_file_that_builds_and_passes_its_self_test(tmp_path):
    project = render(tmp_path, "fused_axpby", "--inline", "--signature", "a: float, x: Tensor, b: Tensor",
                     "--forward", "a * x + b", "--gradients", "x: a * grad; b: grad")
    assert [p.name for p in project.rglob("*") if p.is_file()] == ["fused_axpby.py"]
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select",
                           "E,F,W,I,B,UP", "--line-length", "100", "fused_axpby.py"],
                          cwd=project, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout

    # A wrong formula must fail the self-test: the inline file checks itself.
    source = (project / "fused_axpby.py").read_text()
    run = subprocess.run([sys.executable, "fused_axpby.py"], cwd=project, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "fused_axpby on cpu: ok" in run.stdout
    (project / "wrong.py").write_text(source.replace("return a * x + b;", "return a * x - b;"))
    wrong = subprocess.run([sys.executable, "wrong.py"], cwd=project, capture_output=True, text=True,
                           timeout=900)
    assert wrong.returncode != 0 and "against the float64 reference" in wrong.stderr
