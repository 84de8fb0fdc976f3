"""torch.compile's on-disk cache never hands an op code compiled for another default.

Inductor keys its FX graph cache by the graph's text, not by a custom op's schema, and the
graph leaves out an argument equal to the schema's default; the code it compiles then
passes that default explicitly. Two builds of one op name whose scalar defaults differ (two
projects, or one project rebuilt after an edit) shared a cache entry, and the second got the
first's results under torch.compile (pytorch/pytorch#187319).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import LIGHT_OP, render

COMPILED_CALL = """
import torch
from scaled import scaled
x = torch.arange(4.0)
compiled = torch.compile(lambda x: scaled(x, s={s}), fullgraph=True)
print(scaled(x, s={s}).tolist(), compiled(x).tolist())
"""


def compiled_call(project: Path, s: float, inductor_cache: Path) -> str:
    """Eager's and torch.compile's results of scaled(x, s=s), in a fresh process (JIT build)."""
    result = subprocess.run(
        [sys.executable, "-c", COMPILED_CALL.format(s=s)], cwd=project, capture_output=True,
        text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(project), "SCALED_JIT": "1",
             "SCALED_JIT_CACHE": str(project / "jit-cache"), "USE_CUDA": "0",
             "TORCHINDUCTOR_CACHE_DIR": str(inductor_cache)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


def test_a_default_changed_between_builds_is_not_taken_from_the_cache(tmp_path):
    inductor_cache = tmp_path / "inductor-cache"
    first, second = (
        render(tmp_path / where, "scaled", *LIGHT_OP, "--signature", f"x: Tensor, s: float = {default}",
               "--forward", "x * s", "--reference", "x * s")
        for where, default in (("first", 2.0), ("second", 0.5))
    )
    # Each called with its own default's value: the call a graph leaves the default out of.
    assert compiled_call(first, 2.0, inductor_cache) == "[0.0, 2.0, 4.0, 6.0] [0.0, 2.0, 4.0, 6.0]"
    assert compiled_call(second, 0.5, inductor_cache) == "[0.0, 0.5, 1.0, 1.5] [0.0, 0.5, 1.0, 1.5]"


@pytest.mark.parametrize("options", [
    ("--kind", "rowwise", "--preset", "layernorm"),
    ("--kind", "custom", "--signature", "x: Tensor, n: int = 2, flip: bool = True, w: float = 0.5",
     "--returns", "y: like x", "--gradients", "x"),
    ("--abi", "stable", "--signature", "x: Tensor, alpha: float = 2.0, n: int = 3"),
], ids=["rowwise", "custom", "stable"])
def test_no_kind_gives_a_schema_default(tmp_path, options):
    # The kinds the build above does not cover: their schemas hold no default either (a
    # schema's default is what the graph leaves out), while their Python APIs keep them.
    project = render(tmp_path, "defaulted", *options)
    schemas = re.findall(r'"([^"]*)"', (project / "csrc" / "library.cpp").read_text())
    assert schemas and not [s for s in schemas if "=" in s], schemas
    api = (project / "defaulted" / "defaulted.py").read_text()
    assert re.search(r"def defaulted\([^)]*= ", api), "the API lost its defaults"
