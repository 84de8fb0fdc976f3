"""`opgen new --abi stable`: projects whose library is built on torch's stable ABI.

Such a library includes only torch/csrc/stable and torch/headeronly and calls torch through
its C shims, so one build loads under every torch from 2.10 on. These tests build projects
for real and read what the linker made: the library must need no C++ symbol of torch's and
no library of one torch wheel's own (the CUDA runtime, OpenMP), and pass its own tests.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from opgen import model as opgen_model
from opgen.answers import collect_op
from opgen.kinds import KINDS, STABLE_KINDS
from opgen.model import read_project

from .conftest import HAS_NVCC, compiler_warnings, failed_tests, pip_install, render, run_project_tests
from .test_custom import GATHER, MIXED
from .test_generated_project import add

# The project holds the default op, a matmul, a pixel, two rowwise ops (RMSNorm, and the fused
# residual add + RMSNorm of two outputs, whose Python autograd takes two gradients), two custom
# ops (a gather with an int64 index; three outputs, two of them of a dtype of their own, and
# int, bool and float scalars), and an op with what the stable elementwise glue does beyond
# the default's: two tensors that broadcast, int and float scalars, a gradient that reads a
# tensor and one that is grad itself (summed back to its input's shape by the Python
# autograd).
BROADCAST_OP = ("--signature", "x: Tensor, bias: Tensor, scale: float = 0.5, n: int = 2",
                "--forward", "tanh(x) * scale + bias * n",
                "--gradients", "x: grad * scale * (1 - tanh(x) * tanh(x)); bias: grad * n")


def library(project: Path) -> Path:
    (found,) = (project / project.name).glob("_C*.so")
    return found


def needed(path: Path) -> list[str]:
    dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True,
                             check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dynamic)


def undefined_symbols(path: Path) -> list[str]:
    symbols = subprocess.run(["nm", "-D", "--undefined-only", "--demangle", str(path)],
                             capture_output=True, text=True, check=True).stdout
    return [line.split(maxsplit=1)[1] for line in symbols.splitlines() if line.strip()]


# A per-row absmax quantizer: q in int8, scale one value a row.
QUANT_INT8 = ("--signature", "x: Tensor", "--reductions", "a = max(abs(x))",
              "--forward", "q: clamp(rint(x * 127 / max(a, 1e-12)), -127, 127); scale: max(a, 1e-12) / 127",
              "--reference", "(torch.round(x * 127 / x.abs().amax(-1, keepdim=True).clamp(min=1e-12)), "
                             "x.abs().amax(-1).clamp(min=1e-12) / 127)",
              "--out-dtype", "int8", "--no-backward", "--defaults")
# An L2 normalization that also returns each row's norm, with a backward.
L2_WITH_NORM = ("--signature", "x: Tensor", "--reductions", "ss = sum(x * x)",
                "--forward", "y: x / sqrt(ss); norm: sqrt(ss)",
                "--reference", "(x / x.norm(dim=-1, keepdim=True), x.norm(dim=-1))",
                "--grad-reductions", "gy = sum(grad_y * y)", "--gradients", "x: (grad_y - y * gy) / sqrt(ss)",
                "--defaults")


# Session scope: a module fixture is torn down whenever the worker runs a test of another
# module in between, and was built twice a run (2 x 150-340 s on CI's machine).
@pytest.fixture(scope="session")
def stable_project(python, projects) -> Path:
    project = render(projects / "stable", "stab", "--abi", "stable")
    add(project, "bias_tanh", *BROADCAST_OP)
    add(project, "mm", "--kind", "matmul", "--defaults")
    add(project, "gray", "--kind", "pixel", "--defaults")
    add(project, "rms", "--kind", "rowwise", "--preset", "rmsnorm", "--defaults")
    add(project, "add_rms", "--kind", "rowwise", "--preset", "add_rmsnorm", "--defaults")
    # Per-row outputs (autograd marks them not differentiable) and rows out in int8.
    add(project, "quant", "--kind", "rowwise", *QUANT_INT8)
    add(project, "l2n", "--kind", "rowwise", *L2_WITH_NORM)
    add(project, "gather", *GATHER)
    add(project, "mixed", *MIXED)
    log = pip_install(python, project, TORCH_CUDA_ARCH_LIST="9.0")  # one arch: compiling, not running
    (project.parent / "stable_build.log").write_text(log)  # beside the project, not in its sdist
    return project


@pytest.mark.xdist_group("stable_abi")
def test_a_stable_project_builds_without_a_warning(stable_project):
    assert not compiler_warnings((stable_project.parent / "stable_build.log").read_text())


@pytest.mark.xdist_group("stable_abi")
def test_a_stable_library_needs_no_cpp_symbol_of_torch_and_no_library_of_one_wheel(stable_project):
    so = library(stable_project)
    cpp_torch = [s for s in undefined_symbols(so) if re.match(r"(c10|at|torch|caffe2)::", s)]
    assert not cpp_torch, cpp_torch[:20]
    assert any(s.startswith("torch_library_impl") for s in undefined_symbols(so))  # the C shims
    libraries = needed(so)
    # The CUDA runtime is linked in and OpenMP is torch's own (through the shims'
    # parallel_for): libcudart.so.<major> and libgomp-<hash> come with one torch wheel only.
    assert not [n for n in libraries if n.startswith(("libcudart", "libgomp", "libtorch_python"))], libraries
    if HAS_NVCC:
        assert "libtorch_cuda.so" in libraries
    info = (stable_project / "stab" / "_build_info.py").read_text()
    assert "STABLE_TARGET = (2, 10)" in info


@pytest.mark.xdist_group("stable_abi")
def test_a_stable_project_passes_its_own_tests(python, stable_project):
    result = run_project_tests(python, stable_project)
    assert result.returncode == 0, result.stdout[-5000:]
    assert re.search(r"\d+ passed", result.stdout) and "failed" not in result.stdout


@pytest.mark.xdist_group("stable_abi")
@pytest.mark.parametrize(
    ("torch_version", "target", "says"),
    [("'1.0.0'", None, None),
     (None, "(99, 0)", "stab is built on the stable ABI of torch >= 99.0 but torch {torch} is "
                       "installed; pip install 'torch>=99.0'")],
    ids=["built-with-another-torch", "older-than-the-target"],
)
def test_a_stable_build_loads_under_another_torch_and_refuses_one_older_than_its_target(
    python, stable_project, tmp_path, torch_version, target, says
):
    info = stable_project / "stab" / "_build_info.py"
    original = info.read_text()
    edited = original
    if torch_version:
        edited = re.sub(r"^TORCH_VERSION = .*$", f"TORCH_VERSION = {torch_version}", edited, flags=re.M)
    if target:
        edited = re.sub(r"^STABLE_TARGET = .*$", f"STABLE_TARGET = {target}", edited, flags=re.M)
    try:
        info.write_text(edited)
        result = subprocess.run(
            [str(python), "-c", "import torch, stab; print(torch.__version__, stab.stab(torch.ones(2)))"],
            cwd=tmp_path, capture_output=True, text=True,
        )
    finally:
        info.write_text(original)
    if says is None:
        assert result.returncode == 0, result.stderr[-3000:]
        assert "tensor([2., 2.])" in result.stdout
    else:
        assert result.returncode != 0
        installed = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True, check=True).stdout.strip()
        last_line = result.stderr.strip().splitlines()[-1]
        assert last_line == "ImportError: " + says.format(torch=installed)


@pytest.mark.parametrize(
    ("file", "right", "wrong"),
    [("csrc/bias_tanh.cpp", "offset[1] + k * step[1]", "offset[1] + k"),
     ("bias_tanh/bias_tanh.py", "ctx.save_for_backward(inputs[0])", "ctx.save_for_backward(inputs[1])")],
    ids=["broadcast-walk", "saves-another-tensor"],
)
def test_a_wrong_broadcast_or_python_autograd_fails_the_generated_tests(python, projects, file, right, wrong):
    # What the stable glue does itself: walking a broadcast input through its strides (C++),
    # and saving what the backward reads (Python autograd).
    project = render(projects / f"stable_wrong_{file.split('/')[0]}", "bias_tanh", "--abi", "stable",
                     *BROADCAST_OP)
    path = project / file
    assert right in path.read_text()
    path.write_text(path.read_text().replace(right, wrong))
    pip_install(python, project, USE_CUDA="0")  # the CPU glue is the one made wrong
    result = run_project_tests(python, project, "-k", "broadcast or gradients_match")
    assert result.returncode == 1
    assert {"test_broadcast_inputs_match_float64_reference",
            "test_broadcast_inputs_with_gaps_are_read_through_their_strides"} <= failed_tests(result.stdout)


@pytest.mark.xdist_group("stable_abi")
def test_a_wrong_custom_python_autograd_fails_the_generated_tests(python, stable_project):
    # The custom op's Python autograd hands the backward op its scalars from what the forward
    # saved; a scalar saved from the wrong argument (n, an int, in place of w, the float that
    # scales the gradients) must fail the op's gradient tests. Python only: no rebuild.
    api = stable_project / "stab" / "mixed.py"
    original = api.read_text()
    right = "ctx.scalars = (inputs[3], inputs[4], inputs[5])"
    assert right in original
    try:
        api.write_text(original.replace(right, "ctx.scalars = (inputs[3], inputs[4], inputs[3])"))
        result = run_project_tests(python, stable_project, "tests/test_mixed.py", "-k", "gradients_match")
    finally:
        api.write_text(original)
    assert result.returncode == 1
    assert "test_gradients_match_reference" in failed_tests(result.stdout)


def test_inline_on_the_stable_abi_is_refused_before_rendering(opgen, tmp_path):
    result = opgen("new", "ab", "--defaults", "--abi", "stable", "--inline")
    assert result.exit_code == 2
    assert result.output.strip() == (
        "opgen: error: --inline builds with torch's load_inline, which compiles against torch's own "
        "headers, not the stable ABI; drop --inline or --abi stable")
    assert not (tmp_path / "ab").exists()


def test_every_kind_has_stable_glue():
    assert STABLE_KINDS == list(KINDS)


def test_adding_a_kind_without_stable_glue_to_a_stable_project_is_refused(opgen, tmp_path, monkeypatch):
    # Every kind has stable glue today; a kind added without it is refused, before anything
    # is written, with the kinds that have it.
    project = render(tmp_path, "lib", "--abi", "stable")
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    monkeypatch.setattr(opgen_model, "STABLE_KINDS", ["elementwise", "pixel", "matmul", "rowwise"])
    result = opgen("add", "seg", "-p", str(project), "--defaults", "--kind", "custom")
    assert result.exit_code == 2
    assert result.output.strip() == (
        "opgen: error: op 'seg' is a custom op, whose glue is not written on the stable ABI yet "
        "(only elementwise, pixel, matmul and rowwise ops are); use --abi torch, the default")
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_projects_recorded_before_the_abi_answer_are_on_torchs_abi():
    answers = {"package": "old", "exact": False, "ops": [collect_op("old", {})]}
    assert read_project(answers)["abi"] == "torch"
    assert read_project({**answers, "abi": "stable"})["abi"] == "stable"


def test_the_stable_project_files(tmp_path):
    # No C++ autograd and no vector loops (at::vec is not on the stable ABI); the schema file
    # registers with STABLE_TORCH_LIBRARY; the package needs torch >= 2.10.
    project = render(tmp_path, "st", "--abi", "stable")
    csrc = sorted(p.name for p in (project / "csrc").iterdir())
    assert csrc == ["_C.cpp", "library.cpp", "st.cpp", "st_kernel.cu", "st_kernel.h", "st_math.h"]
    assert "STABLE_TORCH_LIBRARY(st, m)" in (project / "csrc" / "library.cpp").read_text()
    assert 'dependencies = ["torch>=2.10"]' in (project / "pyproject.toml").read_text()
    assert shutil.which("readelf") and shutil.which("nm")  # the build tests above read with these
