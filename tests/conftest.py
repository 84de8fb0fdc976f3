"""Shared helpers for opgen's tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from opgen.cli import main


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root with its content: to show that nothing changed."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    } | {str(p.relative_to(root)) + "/": b"" for p in root.rglob("*") if p.is_dir()}


@pytest.fixture
def opgen(tmp_path, monkeypatch):
    """Run `opgen ARGS...` in tmp_path with click's runner; stdin is not a terminal."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return run


@pytest.fixture(autouse=True)
def _no_template_url_override(monkeypatch):
    monkeypatch.delenv("OPGEN_TEMPLATE_URL", raising=False)
    yield


HAS_NVCC = any(
    (Path(p) / "nvcc").exists() for p in os.environ.get("PATH", "").split(os.pathsep)
) or Path("/usr/local/cuda/bin/nvcc").exists()
