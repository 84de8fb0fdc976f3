"""The suite's xdist groups hold: a group's tests run on one worker, so that a project built
once by a session fixture (the stable ABI's, the custom ops') is built once a run.

pytest 9.2 with pytest-xdist 3.8 ignores the groups without a word (pytest-xdist issue 1386:
loadgroup renames tests through a field pytest 9.2 no longer reads): each of those projects
was then built on both workers, 10 minutes of CI's 80.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SUITE = {
    "pytest.ini": "[pytest]\n",
    "conftest.py": (
        "import os\nimport pytest\n\n\n@pytest.fixture(scope='session')\ndef built():\n"
        "    with open('built.txt', 'a') as log:\n"
        "        log.write(os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n"
    ),
    "test_grouped.py": (
        "import pytest\n\npytestmark = pytest.mark.xdist_group('one')\n\n\n"
        "@pytest.mark.parametrize('i', range(4))\ndef test_uses_the_build(built, i):\n    pass\n"
    ),
}


def test_a_groups_tests_run_on_one_worker(tmp_path: Path):
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist=loadgroup"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    workers = (tmp_path / "built.txt").read_text().split()
    assert len(workers) == 1, f"the session fixture was built by {workers}: the xdist group was split"


def test_each_of_the_longest_tests_is_a_test_of_the_suite():
    # conftest.LONGEST_FIRST names tests by prefix: one renamed would silently start last again.
    from .conftest import LONGEST_FIRST

    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "tests"],
                            cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
    collected = result.stdout.splitlines()
    missing = [prefix for prefix in LONGEST_FIRST if not any(n.startswith(prefix) for n in collected)]
    assert not missing, f"conftest.LONGEST_FIRST names no test of the suite: {missing}"
