"""Shared helpers for opgen's tests."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import venv
from pathlib import Path

import pytest
from click.testing import CliRunner

from opgen.cli import main

# A fresh torch.compile cache for this run, inherited by the generated projects' tests: the
# cache on disk outlives an op whose schema changed (an elementwise backward op that lost a
# gradient), and its stale graphs then fail torch.compile tests that pass from scratch.
# Removed when this process ends: each pytest process (xdist's too) makes one, 15 MB a run.
_INDUCTOR_CACHE = tempfile.mkdtemp(prefix="opgen-tests-inductor-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = _INDUCTOR_CACHE
atexit.register(shutil.rmtree, _INDUCTOR_CACHE, ignore_errors=True)

# The precompiled torch headers of this run's builds (tests/torch_headers_cxx.py), shared by
# xdist's workers: the first process to import this makes the directory, before it starts
# them, and they inherit it. That process removes it (about 500 MB a set of flags) at its end.
if "OPGEN_TESTS_PCH_DIR" not in os.environ:
    os.environ["OPGEN_TESTS_PCH_DIR"] = tempfile.mkdtemp(prefix="opgen-tests-pch-")
    atexit.register(shutil.rmtree, os.environ["OPGEN_TESTS_PCH_DIR"], ignore_errors=True)
TORCH_HEADERS_CXX = Path(__file__).resolve().parent / "torch_headers_cxx.py"


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root with its content: to show that nothing changed."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    } | {str(p.relative_to(root)) + "/": b"" for p in root.rglob("*") if p.is_dir()}


# The suite's longest tests outside xdist groups (seconds of CI's 2-core machine, 2026-12-07,
# --durations, fresh clone of 2ba78c8), run first. xdist (--dist=loadgroup) hands out the
# groups first, those of most tests first (the stable ABI's and the custom ops' builds among
# them), then the other tests in the order collected: with these among the last, one worker
# built the rowwise wrong-kernels project (850 s) alone while the other sat idle.
_REFERENCE_OP = (
    "tests/test_reference_ops.py::test_reference_op_builds_passes_its_tests_and_runs_as_documented"
)
LONGEST_FIRST = (
    "tests/test_rowwise.py::test_wrong_rowwise_kernels_fail_the_generated_tests",  # 909
    "tests/test_generated_project.py::test_arguments_may_take_any_name",  # 850
    "tests/test_generated_project.py::test_ops_on_part_of_the_real_line",  # 538
    _REFERENCE_OP + "[rms_norm]",  # 445
    _REFERENCE_OP + "[several_ops]",  # 312
    _REFERENCE_OP + "[layer_norm]",  # 274
    _REFERENCE_OP + "[softmax]",  # 264
)


def pytest_collection_modifyitems(items):
    def rank(item) -> int:
        return next((i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)),
                    len(LONGEST_FIRST))

    items.sort(key=rank)  # stable: the rest keep their order


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


# An op without autograd, of one dtype: for the tests of a build, its toolchain and its cache
# rather than of the op, in half the compile time of the default op (no autograd file, one
# dtype's loops and kernels).
LIGHT_OP = ("--no-backward", "--dtypes", "float32")


def render(where: Path, name: str, *options: str) -> Path:
    """`opgen new NAME -o WHERE --defaults OPTIONS...` in this process; the project's path."""
    try:
        main(["new", name, "-o", str(where), "--defaults", *options])
    except SystemExit as exit_:
        assert exit_.code == 0
    return where / name


def assert_ruff_passes(project: Path) -> None:
    """`ruff check .` and `ruff format --check .` in the project pass, with its own settings
    (its pyproject.toml): the checks find nothing and the formatter would change nothing."""
    for command in (["check", "."], ["format", "--check", "."]):
        result = subprocess.run([sys.executable, "-m", "ruff", *command], cwd=project,
                                capture_output=True, text=True)
        assert result.returncode == 0, f"ruff {' '.join(command)}:\n{result.stdout}{result.stderr}"


def long_name(stem: str, length: int) -> str:
    """`stem` made `length` characters long (`stem_xxx...`), as long a name as opgen takes."""
    return (stem + "_" + "x" * length)[:length]


HAS_NVCC = any(
    (Path(p) / "nvcc").exists() for p in os.environ.get("PATH", "").split(os.pathsep)
) or Path("/usr/local/cuda/bin/nvcc").exists()


# Builds run ninja, and the tests run pytest, from this environment's bin directory, also
# when it is a virtual environment that was not activated.
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


@pytest.fixture(scope="session")
def python(tmp_path_factory) -> Path:
    """A virtual environment's python that sees this environment's torch, ninja and pytest.

    The projects the tests build are installed into it, not into the environment running the
    tests. That environment (a user's virtual environment, or the machine's Python) is added
    to its path by a .pth file; `system_site_packages` would add the base interpreter's
    packages instead, which are not the user's.
    """
    root = tmp_path_factory.mktemp("venv")
    # No pip of its own: ensurepip would also install an old setuptools that shadows this
    # environment's. This environment's pip installs into it with --python.
    venv.create(root, with_pip=False)
    inner = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
    outer = [path for path in site.getsitepackages() if Path(path).is_dir()]
    (inner / "_outer_environment.pth").write_text(
        "".join(f"import site; site.addsitedir({path!r})\n" for path in outer)
    )
    return root / "bin" / "python"


@pytest.fixture(scope="session")
def projects(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("projects")


def pip_install(python: Path, project: Path, *, as_users_build: bool = False, **env: str) -> str:
    """`pip install -e PROJECT` into python's environment; the build's log.

    The build parses torch's headers once per run (tests/torch_headers_cxx.py) unless it is
    as_users_build, or the test chose its own compiler (CXX).
    """
    if not as_users_build and "CXX" not in env and "CXX" not in os.environ:
        env["CXX"] = str(TORCH_HEADERS_CXX)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-v", "--no-deps",
         "--no-build-isolation", "-e", str(project)],
        capture_output=True, text=True, env={**os.environ, **env},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


def run_project_tests(python: Path, project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        # No captured logs: torch.compile's debug records would fill the output the
        # assertions print, in place of the failure.
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging", *args],
        cwd=project, capture_output=True, text=True,
    )


def failed_tests(output: str) -> set[str]:
    return set(re.findall(r"FAILED tests/\S+::(\w+)", output))


def compiler_warnings(log: str) -> list[str]:
    """The compilers' warnings about a project's own files (csrc/...) in its build's log: the
    generated code is meant to build without any (torch's extension flags include -Wall)."""
    return sorted(set(re.findall(r"^\S*csrc/\S+ warning\b.*$", log, re.M)))


def make_static_libstdcxx_gxx(directory: Path) -> Path:
    """A g++ wrapper like the GPU machine's CXX=/opt/gcc/bin/g++, made of this machine's g++.

    It puts first, with -B, a directory that holds only libstdc++.a, so that every shared
    library it links carries its own copy of libstdc++ and does not need libstdc++.so.6.
    """
    gxx = shutil.which("g++")
    assert gxx, "these tests need g++ (CI has it)"
    archive = subprocess.run([gxx, "-print-file-name=libstdc++.a"], capture_output=True, text=True,
                             check=True).stdout.strip()
    only_the_archive = directory / "lib"
    only_the_archive.mkdir(parents=True)
    (only_the_archive / "libstdc++.a").symlink_to(archive)
    wrapper = directory / "g++"
    wrapper.write_text(f'#!/bin/sh\nexec {gxx} -B{only_the_archive}/ "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.fixture(scope="session")
def static_gxx(tmp_path_factory) -> Path:
    return make_static_libstdcxx_gxx(tmp_path_factory.mktemp("static_gxx"))
