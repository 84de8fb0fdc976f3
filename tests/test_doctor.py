"""`opgen doctor`: what it finds on this machine, and on machines made wrong on purpose.

The wrong machines are made of real programs: a fake CUDA toolkit whose nvcc script
prints another version, a PATH without ninja, g++ wrapper scripts that add -static-libstdc++
or link libstdc++.a through -B, a virtual environment without torch. Importing torch is the slow part
of doctor (~2 s), so the tests that are about something else reuse one real probe of this
Python's torch (`probed`), where only the GPUs it reports are ever made up.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import shutil
import subprocess
import sys
import types
import venv
from pathlib import Path

import click
import pytest

import opgen
from opgen import doctor
from opgen.doctor import jobs, toolkit
from opgen.doctor.archs import parse_arch
from opgen.doctor.report import combine

from .conftest import render

WORKTREE = Path(opgen.__file__).resolve().parent.parent
ENV_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "CXX", "LDFLAGS",
                 "CUDA_VISIBLE_DEVICES")
# The tests of a machine without torch share one environment (`python_without_torch`): one
# worker makes it once.
pytestmark = pytest.mark.xdist_group("doctor")
CHECKS = ["python", "torch", "torch_cuda", "nvcc", "cuda_home", "cudart", "ninja", "cxx", "libstdcxx",
          "gpus", "arch_list", "max_jobs"]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    """Build settings of the person running the tests must not leak into them."""
    for variable in ENV_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture(scope="session")
def real_probe() -> dict:
    return doctor.probe_python(sys.executable)


@pytest.fixture
def probed(monkeypatch, real_probe):
    """Reuse the real probe of this Python; returns it, for a test to add GPUs to."""
    probe = copy.deepcopy(real_probe)
    # Set on the package: diagnose looks probe_python up there.
    monkeypatch.setattr(doctor, "probe_python", lambda python: probe)
    return probe


@pytest.fixture
def torch_cuda(real_probe) -> tuple[int, int]:
    if "torch" not in real_probe or not real_probe["torch_cuda"]:
        pytest.skip("needs a CUDA build of torch, to compare nvcc's version with")
    return tuple(int(part) for part in real_probe["torch_cuda"].split(".")[:2])


def run_doctor(opgen, *args: str) -> tuple[int, dict[str, dict]]:
    result = opgen("doctor", "--json", *args)
    report = json.loads(result.output)
    assert report["ok"] == (result.exit_code == 0)
    assert {check["status"] for check in report["checks"]} <= {"ok", "warning", "error", "missing"}
    for check in report["checks"]:
        assert "\n" not in check["value"] + check["fix"], check
        if check["status"] in ("warning", "error"):
            assert check["fix"], f"{check['name']} has no fix"
    return result.exit_code, {check["name"]: check for check in report["checks"]}


def fake_toolkit(root: Path, release: str, archs: str = "75 80 90") -> Path:
    """A CUDA toolkit directory whose nvcc is a script printing `release`."""
    home = root / f"cuda-{release}"
    for sub in ("bin", "include", "lib64"):
        (home / sub).mkdir(parents=True)
    (home / "include" / "cuda_runtime.h").write_text("")
    (home / "lib64" / "libcudart.so").write_text("")
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f'  --version) echo "Cuda compilation tools, release {release}, V{release}.99";;\n'
        f"  --list-gpu-arch) for a in {archs}; do echo compute_$a; done;;\n"
        "  *) exit 1;;\n"
        "esac\n"
    )
    nvcc.chmod(0o755)
    return home


def use_toolkit(monkeypatch, home: Path) -> None:
    monkeypatch.setenv("PATH", f"{home / 'bin'}{os.pathsep}{os.environ['PATH']}")


def script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


# --- this machine ------------------------------------------------------------------------

WRAPPER = Path("/usr/local/bin/nvcc")
IS_CI_MACHINE = (WRAPPER.is_file() and WRAPPER.read_bytes()[:2] == b"#!"
                 and toolkit.is_cuda_toolkit(Path("/usr/local/cuda")))


@pytest.mark.skipif(not IS_CI_MACHINE, reason="describes the CI machine: nvcc is a wrapper script in "
                    "/usr/local/bin and the toolkit is /usr/local/cuda")
def test_this_machine_resolves_the_wrapper_nvcc_to_usr_local_cuda(opgen, monkeypatch, real_probe):
    monkeypatch.setenv("PATH", f"/usr/local/bin{os.pathsep}{os.environ['PATH']}")
    code, checks = run_doctor(opgen)
    assert list(checks) == CHECKS
    assert checks["python"]["value"].startswith(".".join(map(str, sys.version_info[:3])))
    assert checks["torch"] == {"name": "torch", "status": "ok", "value": real_probe["torch"], "fix": ""}
    major, minor = toolkit.nvcc_version(Path("/usr/local/cuda"))
    assert checks["nvcc"]["value"].startswith(f"{major}.{minor} at /usr/local/cuda/bin/nvcc")
    # torch alone would take /usr/local from the wrapper and fail to link; doctor says so
    cuda_home = checks["cuda_home"]
    assert cuda_home["status"] == "warning"
    assert "/usr/local/bin/nvcc is a wrapper script for /usr/local/cuda-" in cuda_home["value"]
    assert "guesses CUDA_HOME=/usr/local," in cuda_home["value"]
    assert "cannot find -lcudart" in cuda_home["value"]
    assert cuda_home["fix"] == "export CUDA_HOME=/usr/local/cuda"
    assert checks["cudart"]["status"] == "ok"
    assert checks["cudart"]["value"].startswith("/usr/local/cuda/lib64/libcudart.so")
    assert code == (1 if any(c["status"] == "error" for c in checks.values()) else 0)


def test_text_output_is_a_table_with_fixes_and_a_summary(opgen, probed, tmp_path, monkeypatch, torch_cuda):
    use_toolkit(monkeypatch, fake_toolkit(tmp_path, f"{torch_cuda[0] - 1}.0"))
    result = opgen("doctor")
    lines = result.output.splitlines()
    assert lines[0].split() == ["check", "status", "value"]
    nvcc = next(i for i, line in enumerate(lines) if line.startswith("nvcc "))
    assert lines[nvcc].split()[1] == "error"
    assert lines[nvcc + 1].lstrip().startswith(f"fix: install CUDA {torch_cuda[0]}.x")
    assert lines[-1].endswith("fix the errors before building (exit status 1)") and result.exit_code == 1


def test_doctor_never_imports_torch_into_opgen():
    code = ("import sys\nfrom opgen.cli import main\n"
            "try:\n    main(['doctor'])\nexcept SystemExit:\n    pass\n"
            "assert 'torch' not in sys.modules, 'opgen doctor imported torch'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=WORKTREE)
    assert result.returncode == 0, result.stderr
    assert "torch " in result.stdout  # and it did check torch, in a subprocess


# --- nvcc and CUDA_HOME --------------------------------------------------------------------


def test_an_nvcc_of_another_major_version_is_an_error(opgen, probed, tmp_path, monkeypatch, torch_cuda):
    home = fake_toolkit(tmp_path, f"{torch_cuda[0] - 1}.4")
    use_toolkit(monkeypatch, home)
    code, checks = run_doctor(opgen)
    assert code == 1
    nvcc = checks["nvcc"]
    assert nvcc["status"] == "error"
    assert nvcc["value"].startswith(f"{torch_cuda[0] - 1}.4 at {home}/bin/nvcc (from nvcc on PATH")
    assert f"torch is built with CUDA {probed['torch_cuda']}" in nvcc["value"]
    assert nvcc["fix"].startswith(f"install CUDA {torch_cuda[0]}.x and export CUDA_HOME to it")
    assert checks["cuda_home"]["status"] == "ok" and checks["cudart"]["status"] == "ok"


def test_an_nvcc_of_another_minor_version_is_a_warning(opgen, probed, tmp_path, monkeypatch, torch_cuda):
    other_minor = torch_cuda[1] + 1
    use_toolkit(monkeypatch, fake_toolkit(tmp_path, f"{torch_cuda[0]}.{other_minor}"))
    code, checks = run_doctor(opgen)
    assert checks["nvcc"]["status"] == "warning" and "the same major version" in checks["nvcc"]["value"]
    assert checks["nvcc"]["fix"] == f"to match exactly, install CUDA {torch_cuda[0]}.{torch_cuda[1]} and " \
                                    "export CUDA_HOME to it"
    assert code == 0 and not [c for c in checks.values() if c["status"] == "error"]


def test_the_same_nvcc_version_as_torch_is_ok(opgen, probed, tmp_path, monkeypatch, torch_cuda):
    use_toolkit(monkeypatch, fake_toolkit(tmp_path, f"{torch_cuda[0]}.{torch_cuda[1]}"))
    _, checks = run_doctor(opgen)
    assert checks["nvcc"]["status"] == "ok" and checks["nvcc"]["value"].endswith("as torch's CUDA")


def test_a_cuda_home_that_is_no_toolkit_is_ignored_like_the_project_ignores_it(opgen, probed, tmp_path,
                                                                              monkeypatch, torch_cuda):
    home = fake_toolkit(tmp_path, f"{torch_cuda[0]}.{torch_cuda[1]}")
    use_toolkit(monkeypatch, home)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nowhere"))
    _, checks = run_doctor(opgen)
    assert checks["nvcc"]["value"].startswith(f"{torch_cuda[0]}.{torch_cuda[1]} at {home}/bin/nvcc")
    assert checks["cuda_home"]["status"] == "warning"
    assert f"CUDA_HOME={tmp_path / 'nowhere'} is ignored" in checks["cuda_home"]["value"]


def test_a_fix_is_said_once_when_one_issue_contains_another():
    # CUDA_HOME ignored ("unset CUDA_HOME, or export CUDA_HOME=...") and torch guessing wrong
    # ("export CUDA_HOME=...") have the same remedy: one export in the fix.
    checks = combine("cuda_home", "", [
        ("warning", "ignored", "unset CUDA_HOME, or export CUDA_HOME=/usr/local/cuda"),
        ("warning", "guessed wrong", "export CUDA_HOME=/usr/local/cuda"),
    ])
    assert checks.fix == "unset CUDA_HOME, or export CUDA_HOME=/usr/local/cuda"


def test_an_nvcc_wrapper_running_another_toolkit_than_the_builds_is_reported(opgen, probed, tmp_path,
                                                                             monkeypatch):
    runs = fake_toolkit(tmp_path, "12.8")
    builds = fake_toolkit(tmp_path, "13.0")
    wrapper_dir = tmp_path / "wrappers"
    wrapper_dir.mkdir()
    script(wrapper_dir / "nvcc", f'#!/bin/sh\nexec {runs}/bin/nvcc "$@"\n')
    monkeypatch.setenv("PATH", f"{wrapper_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CUDA_HOME", str(builds))
    _, checks = run_doctor(opgen)
    assert checks["nvcc"]["value"].startswith(f"13.0 at {builds}/bin/nvcc (from CUDA_HOME)")
    cuda_home = checks["cuda_home"]
    assert cuda_home["status"] == "warning"
    assert f"the nvcc on PATH, {wrapper_dir}/nvcc, runs {runs}" in cuda_home["value"]
    assert cuda_home["fix"].startswith(f"export CUDA_HOME={runs} to build with the nvcc on PATH")


def test_a_toolkit_without_the_unversioned_libcudart_cannot_link(opgen, probed, tmp_path, monkeypatch):
    home = fake_toolkit(tmp_path, "13.0")
    (home / "lib64" / "libcudart.so").rename(home / "lib64" / "libcudart.so.13")
    use_toolkit(monkeypatch, home)
    code, checks = run_doctor(opgen)
    assert checks["cudart"]["status"] == "error" and code == 1
    assert "no libcudart.so, which linking with -lcudart needs" in checks["cudart"]["value"]
    assert checks["cudart"]["fix"].endswith(f"ln -s libcudart.so.13 {home}/lib64/libcudart.so")


# --- ninja and the host compiler --------------------------------------------------------------


def path_with_only(tmp_path: Path, *tools: str) -> str:
    """A PATH directory holding links to `tools` from this machine, and nothing else."""
    bin_dir = tmp_path / "only-bin"
    bin_dir.mkdir()
    for tool in tools:
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"needs {tool}")
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_missing_ninja_is_a_warning_with_the_fix(opgen, probed, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with_only(tmp_path, "c++", "g++"))
    probed["scripts"] = str(tmp_path / "no-scripts")  # not even where pip would put ninja
    code, checks = run_doctor(opgen)
    ninja = checks["ninja"]
    assert ninja["status"] == "warning" and ninja["value"].startswith("not on PATH: torch then compiles")
    assert ninja["fix"] == f"{sys.executable} -m pip install ninja"
    assert checks["cxx"]["status"] == "ok"  # the rest is still checked


def test_ninja_installed_but_not_on_path_gets_the_path_fix(opgen, probed, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with_only(tmp_path, "c++", "g++"))
    scripts = tmp_path / "venv-bin"
    scripts.mkdir()
    script(scripts / "ninja", "#!/bin/sh\necho 1.11.1\n")
    probed["scripts"] = str(scripts)
    _, checks = run_doctor(opgen)
    assert checks["ninja"]["status"] == "warning"
    assert checks["ninja"]["fix"].startswith(f"export PATH={scripts}:$PATH")


@pytest.fixture
def gxx() -> str:
    found = shutil.which("g++")
    if found is None:
        pytest.skip("needs g++")
    return found


def test_the_gpu_machines_cxx_wrapper_is_an_error_with_a_fix_that_works(opgen, probed, monkeypatch,
                                                                       static_gxx, gxx):
    # The GPU machine's CXX: no flag says "static", only the library it links shows it.
    monkeypatch.setenv("CXX", str(static_gxx))
    code, checks = run_doctor(opgen)
    check = checks["libstdcxx"]
    assert code == 1 and check["status"] == "error"
    assert check["value"].startswith(f"{static_gxx}, a wrapper script, links libstdc++ statically: a "
                                     "shared library it links does not need libstdc++.so.6")
    if probed.get("libstdcxx"):  # opgen projects name torch's libstdc++ and link it dynamically
        assert f"projects made by this opgen name torch's {probed['libstdcxx']}" in check["value"]
    assert check["fix"].startswith("export CXX=/") and str(static_gxx) not in check["fix"]
    assert checks["cxx"]["status"] == "ok"  # it compiles; how it links is the problem
    # The fix works: with the compiler it names, the check passes.
    monkeypatch.setenv("CXX", check["fix"].removeprefix("export CXX="))
    code, checks = run_doctor(opgen)
    assert checks["libstdcxx"]["status"] == "ok"


def test_a_cxx_wrapper_adding_static_libstdcxx_is_an_error(opgen, probed, tmp_path, monkeypatch, gxx):
    wrapper = script(tmp_path / "g++", f'#!/bin/sh\nexec {gxx} "$@" -static-libstdc++\n')
    monkeypatch.setenv("CXX", str(wrapper))
    code, checks = run_doctor(opgen)
    check = checks["libstdcxx"]
    assert code == 1 and check["status"] == "error"
    assert f"{wrapper}, a wrapper script, links libstdc++ statically" in check["value"]
    assert check["fix"].startswith("export CXX=/") and str(wrapper) not in check["fix"]


def test_static_libstdcxx_from_ldflags_is_an_error_too(opgen, probed, monkeypatch, gxx):
    monkeypatch.setenv("CXX", gxx)
    monkeypatch.setenv("LDFLAGS", "-Wl,-O1 -static-libstdc++")
    _, checks = run_doctor(opgen)
    assert checks["libstdcxx"]["status"] == "error" and "with LDFLAGS='-Wl,-O1 -static-libstdc++'" in \
        checks["libstdcxx"]["value"]
    assert checks["libstdcxx"]["fix"] == "remove -static-libstdc++ from LDFLAGS"


def test_a_plain_gxx_links_libstdcxx_dynamically(opgen, probed, monkeypatch, gxx):
    monkeypatch.setenv("CXX", gxx)
    _, checks = run_doctor(opgen)
    assert checks["libstdcxx"] == {"name": "libstdcxx", "status": "ok", "fix": "",
                                   "value": f"{gxx} links libstdc++ dynamically, sharing torch's"}
    assert checks["cxx"]["value"].startswith(f"{gxx} (compiles and links): ")


def test_a_missing_compiler_is_an_error(opgen, probed, tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-g++"))
    code, checks = run_doctor(opgen)
    assert code == 1 and checks["cxx"]["status"] == "error" and "export CXX=" in checks["cxx"]["fix"]
    assert checks["libstdcxx"]["status"] == "missing"


# --- archs, GPUs, jobs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arch_list", "says"),
    [
        ("8.0;sm_90", "'sm_90' is not an arch"),
        ("8.0;", "'' is not an arch"),
        ("8.0 9.0.1", "'9.0.1' is not an arch"),
        ("3.5;8.0", "nvcc 13.0 cannot build 3.5 (it builds 7.5 to 9.0)"),
        ("Ampere", "nvcc 13.0 cannot build 8.6+PTX"),  # named as torch names it: 8.0;8.6+PTX
    ],
)
def test_a_bad_arch_list_entry_is_an_error(opgen, probed, tmp_path, monkeypatch, arch_list, says):
    use_toolkit(monkeypatch, fake_toolkit(tmp_path, "13.0", archs="75 80 90"))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", arch_list)
    code, checks = run_doctor(opgen)
    check = checks["arch_list"]
    assert code == 1 and check["status"] == "error" and says in check["value"], check
    assert check["value"].startswith(repr(arch_list))
    assert check["fix"].startswith("export TORCH_CUDA_ARCH_LIST='8.0")


def test_the_probe_reads_torchs_arch_names_in_the_order_torch_expands_them(real_probe):
    if "torch" not in real_probe:
        pytest.skip("needs torch")
    names = real_probe["arch_names"]
    assert "Ampere" in dict(names)
    assert all(parse_arch(arch) for _, group in names for arch in group.split(";"))
    # Each name is replaced wherever it occurs: "Ampere+Tegra" must come before "Ampere".
    assert not [(a, b) for i, (a, _) in enumerate(names) for b, _ in names[i + 1:] if a in b]


def test_without_torchs_arch_names_a_name_is_not_checked_rather_than_an_error(opgen, probed, tmp_path,
                                                                              monkeypatch):
    del probed["arch_names"]
    probed["gpus"] = [{"name": "NVIDIA Test GPU", "capability": "8.6"}]
    use_toolkit(monkeypatch, fake_toolkit(tmp_path, "13.0", archs="75 80 86 90"))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "Ampere")
    _, checks = run_doctor(opgen)
    assert checks["arch_list"]["status"] == "missing", checks["arch_list"]
    assert "'Ampere' not checked: may be a named arch group" in checks["arch_list"]["value"]


@pytest.mark.parametrize(
    ("arch_list", "capability", "status"),
    [
        ("7.5;8.0;9.0+PTX", "9.0", "ok"),
        ("8.0", "8.6", "ok"),  # machine code runs on later GPUs of the same major version
        ("8.0+PTX", "9.0", "ok"),  # PTX is compiled by the driver for newer GPUs
        ("8.0", "9.0", "error"),
        ("9.0", "8.0", "error"),
        ("8.6", "8.0", "error"),  # but not on earlier ones
        ("9.0a", "9.0", "ok"),
    ],
)
def test_the_arch_list_must_cover_the_visible_gpus(opgen, probed, tmp_path, monkeypatch, arch_list,
                                                   capability, status):
    probed["gpus"] = [{"name": "NVIDIA Test GPU", "capability": capability}]  # as torch reports one
    use_toolkit(monkeypatch, fake_toolkit(tmp_path, "13.0", archs="75 80 86 90"))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", arch_list)
    _, checks = run_doctor(opgen)
    assert checks["gpus"]["value"] == f"0: NVIDIA Test GPU ({capability})"
    assert checks["arch_list"]["status"] == status, checks["arch_list"]
    if status == "error":
        assert "no kernel image is available" in checks["arch_list"]["value"]
        assert capability in checks["arch_list"]["fix"]


def test_an_unset_arch_list_without_gpus_names_the_projects_default(opgen, probed, tmp_path, monkeypatch):
    probed["gpus"] = []
    use_toolkit(monkeypatch, fake_toolkit(tmp_path, "13.0", archs="80 90 100"))
    _, checks = run_doctor(opgen)
    assert checks["arch_list"]["value"] == "unset, no GPU visible: opgen projects build 8.0;9.0+PTX"
    assert checks["gpus"]["status"] == "missing"


@pytest.mark.parametrize(
    ("max_jobs", "status", "fix"),
    [
        (None, "warning", "export MAX_JOBS=4"),  # ninja's default for 16 CPUs: 18 jobs
        ("4", "ok", ""),
        ("5", "warning", "export MAX_JOBS=4"),
        ("0", "warning", "export MAX_JOBS=4"),  # -j 0: no limit at all
        ("lots", "warning", "export MAX_JOBS=4"),
    ],
)
def test_max_jobs_against_memory(opgen, probed, monkeypatch, max_jobs, status, fix):
    monkeypatch.setattr(jobs, "available_memory", lambda: 9 * jobs.GIB)  # room for 4 jobs
    monkeypatch.setattr(jobs, "cpu_count", lambda: 16)
    if max_jobs is not None:
        monkeypatch.setenv("MAX_JOBS", max_jobs)
    _, checks = run_doctor(opgen)
    assert (checks["max_jobs"]["status"], checks["max_jobs"]["fix"]) == (status, fix), checks["max_jobs"]
    if max_jobs is None:
        assert checks["max_jobs"]["value"].startswith("18 parallel compile jobs (ninja's default for 16")


def test_max_jobs_fix_never_proposes_more_jobs_than_cpus(opgen, probed, monkeypatch):
    monkeypatch.setattr(jobs, "available_memory", lambda: 22 * jobs.GIB)  # room for 11 jobs
    monkeypatch.setattr(jobs, "cpu_count", lambda: 2)
    monkeypatch.setenv("MAX_JOBS", "abc")
    _, checks = run_doctor(opgen)
    assert checks["max_jobs"]["fix"] == "export MAX_JOBS=2"


def test_this_machines_memory_is_read():
    memory = jobs.available_memory()
    assert memory is None or 0 < memory < 1 << 50


# --- torch missing -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory) -> Path:
    """A virtual environment that cannot see the machine's packages: opgen and what doctor
    imports of its dependencies (click only: the projects' _toolchain.py is plain Python)."""
    root = tmp_path_factory.mktemp("no-torch")
    venv.create(root / "venv", system_site_packages=False, with_pip=False)
    python = root / "venv" / "bin" / "python"
    assert subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0
    site = root / "path"
    site.mkdir()
    (site / "opgen").symlink_to(WORKTREE / "opgen")
    (site / "click").symlink_to(Path(click.__file__).parent)
    return python


def test_without_torch_doctor_says_so_and_checks_the_rest(tmp_path, python_without_torch):
    env = {**os.environ, "PYTHONPATH": str(python_without_torch.parents[2] / "path")}
    for variable in ENV_VARIABLES:
        env.pop(variable, None)
    result = subprocess.run([python_without_torch, "-m", "opgen", "doctor", "--json"], capture_output=True,
                            text=True, env=env, cwd=tmp_path)
    checks = {check["name"]: check for check in json.loads(result.stdout)["checks"]}
    assert result.returncode == 1, result.stderr
    assert list(checks) == CHECKS
    torch = checks["torch"]
    assert torch["status"] == "error"
    assert torch["value"].startswith(f"not installed for {python_without_torch}")
    assert torch["fix"].startswith(f"{python_without_torch} -m pip install torch")
    assert checks["torch_cuda"]["status"] == "missing"
    assert checks["python"]["status"] == "ok" and checks["cxx"]["status"] == "ok"
    if shutil.which("nvcc") or toolkit.is_cuda_toolkit(Path("/usr/local/cuda")):
        assert checks["nvcc"]["status"] == "ok" and "torch is not importable" in checks["nvcc"]["value"]


def test_python_option_checks_another_interpreter(opgen, python_without_torch):
    code, checks = run_doctor(opgen, "--python", str(python_without_torch))
    assert code == 1 and checks["torch"]["status"] == "error"
    assert f"(checked with --python {python_without_torch})" in checks["torch"]["value"]


# --- a generated project -----------------------------------------------------------------------


def write_build_info(project: Path, torch_version: str, cuda: str | None, with_cuda: bool = False,
                     arch_list: str = "", debug: bool = False, stable_target: tuple | None = None) -> None:
    """Run the project's own setup.py write_build_info, with a stand-in for torch."""
    tree = ast.parse((project / "setup.py").read_text())
    function = next(node for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name == "write_build_info")
    namespace = {"ROOT": project, "NAME": project.name, "json": json}  # what it uses of setup.py
    exec(compile(ast.Module([function], type_ignores=[]), "setup.py", "exec"), namespace)
    torch = types.SimpleNamespace(__version__=torch_version, version=types.SimpleNamespace(cuda=cuda))
    namespace["write_build_info"](torch, with_cuda, arch_list, debug, stable_target)


def built_library(project: Path) -> Path:
    library = project / project.name / "_C.abi3.so"
    library.write_bytes(b"\x7fELF")
    return library


def test_an_unbuilt_project_is_reported_with_the_build_command(opgen, probed, tmp_path):
    project = render(tmp_path, "my_op")
    code, checks = run_doctor(opgen, str(project))
    assert code == 0
    assert checks["project"]["status"] == "ok"
    assert checks["project"]["value"].startswith(f"my_op at {project}, template ")
    assert checks["build"] == {
        "name": "build", "status": "missing",
        "value": "not built: my_op/_build_info.py does not exist, so `import my_op` fails",
        "fix": f"cd {project} && pip install --no-build-isolation -e .",
    }


def test_a_project_built_against_another_torch_is_an_error(opgen, probed, tmp_path):
    project = render(tmp_path, "my_op")
    write_build_info(project, "2.4.0+cu121", "12.1")
    built_library(project)
    code, checks = run_doctor(opgen, str(project))
    assert code == 1
    build = checks["build"]
    assert build["status"] == "error"
    assert (f"built against torch 2.4.0+cu121, but torch {probed['torch']} is installed: "
            "`import my_op` raises ImportError") in build["value"]
    assert build["fix"] == f"cd {project} && pip install --no-build-isolation -e ."


@pytest.mark.parametrize(("target", "status"), [((2, 10), "ok"), ((99, 0), "error")])
def test_a_stable_abi_build_matches_every_torch_from_its_target_on(opgen, probed, tmp_path, target, status):
    project = render(tmp_path, "my_op", "--abi", "stable")
    write_build_info(project, "2.15.0+cu132", probed["torch_cuda"], stable_target=target)
    library = built_library(project)
    for source in (project / "csrc").iterdir():
        os.utime(source, (library.stat().st_mtime - 60,) * 2)
    _, checks = run_doctor(opgen, str(project))
    build = checks["build"]
    assert build["status"] == status, build
    wanted = ".".join(map(str, target))
    assert build["value"].startswith(f"built on the stable ABI for torch >= {wanted}, CPU only")
    if status == "error":
        says = f"but torch {probed['torch']} is installed: `import my_op` raises ImportError"
        assert says in build["value"]
        assert build["fix"] == f"pip install 'torch>={wanted}'"


def test_a_project_built_for_another_cuda_is_an_error(opgen, probed, tmp_path):
    project = render(tmp_path, "my_op")
    write_build_info(project, probed["torch"], "11.8")
    built_library(project)
    code, checks = run_doctor(opgen, str(project))
    assert code == 1 and "built against torch for CUDA 11.8" in checks["build"]["value"]


def test_a_current_build_is_ok_and_a_stale_one_is_a_warning(opgen, probed, tmp_path):
    project = render(tmp_path, "my_op")
    write_build_info(project, probed["torch"], probed["torch_cuda"], True, "7.5;8.0;9.0+PTX")
    library = built_library(project)
    for source in (project / "csrc").iterdir():
        os.utime(source, (library.stat().st_mtime - 60,) * 2)
    _, checks = run_doctor(opgen, str(project))
    assert checks["build"]["status"] == "ok", checks["build"]
    assert checks["build"]["value"] == (
        f"built against torch {probed['torch']} (CUDA {probed['torch_cuda']}), "
        "CUDA kernels for 7.5;8.0;9.0+PTX, matching the installed torch")
    kernel = project / "csrc" / "my_op_kernel.cu"
    os.utime(kernel, (library.stat().st_mtime + 60,) * 2)
    _, checks = run_doctor(opgen, str(project))
    assert checks["build"]["status"] == "warning"
    assert "csrc/my_op_kernel.cu changed after the last build" in checks["build"]["value"]


def test_a_debug_build_is_a_warning_that_says_how_to_go_back(opgen, probed, tmp_path):
    project = render(tmp_path, "my_op")
    write_build_info(project, probed["torch"], probed["torch_cuda"], True, "9.0", debug=True)
    library = built_library(project)
    for source in (project / "csrc").iterdir():
        os.utime(source, (library.stat().st_mtime - 60,) * 2)
    _, checks = run_doctor(opgen, str(project))
    assert checks["build"]["status"] == "warning"
    assert "a debug build (MY_OP_DEBUG=1: -G -O0)" in checks["build"]["value"]
    assert "(without MY_OP_DEBUG)" in checks["build"]["fix"]


def test_a_build_whose_library_is_missing_is_a_warning(opgen, probed, tmp_path):
    project = render(tmp_path, "my_op")
    write_build_info(project, probed["torch"], probed["torch_cuda"])
    _, checks = run_doctor(opgen, str(project))
    assert checks["build"]["status"] == "warning" and "no compiled my_op/_C*.so" in checks["build"]["value"]


def test_a_build_for_other_archs_than_the_visible_gpu_is_an_error(opgen, probed, tmp_path):
    probed["gpus"] = [{"name": "NVIDIA Test GPU", "capability": "9.0"}]
    project = render(tmp_path, "my_op")
    write_build_info(project, probed["torch"], probed["torch_cuda"], True, "visible GPUs: 8.0")
    built_library(project)
    _, checks = run_doctor(opgen, str(project))
    assert checks["build"]["status"] == "error" and "0: NVIDIA Test GPU (9.0)" in checks["build"]["value"]


def test_a_project_recording_package_instead_of_op_name_is_read_by_it(opgen, probed, tmp_path):
    project = render(tmp_path, "my_op")
    answers = project / ".copier-answers.yml"
    answers.write_text(answers.read_text().replace("op_name: my_op", "package: my_op"))
    assert "op_name" not in answers.read_text()
    _, checks = run_doctor(opgen, str(project))
    assert checks["project"]["value"].startswith(f"my_op at {project}, template ")
    assert checks["build"]["value"].startswith("not built: my_op/_build_info.py does not exist")


def test_the_project_is_read_not_imported(opgen, probed, tmp_path):
    project = render(tmp_path, "my_op")
    write_build_info(project, probed["torch"], probed["torch_cuda"])
    (project / "my_op" / "_build_info.py").write_text(
        (project / "my_op" / "_build_info.py").read_text() + "raise SystemExit('imported')\n")
    _, checks = run_doctor(opgen, str(project))  # importing it would have ended the run
    assert checks["build"]["status"] == "warning" and "matching" not in checks["build"]["value"]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: None, "has no .copier-answers.yml, so opgen did not generate it"),
        (lambda p: (p / ".copier-answers.yml").write_text("op_name: ../../etc\n"), "has no valid op_name"),
        (lambda p: (p / ".copier-answers.yml").write_text("package: ../../etc\n"), "has no valid package"),
    ],
)
def test_a_path_that_is_no_project_is_a_usage_error(opgen, tmp_path, make, says):
    project = tmp_path / "not_a_project"
    project.mkdir()
    make(project)
    result = opgen("doctor", str(project))
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1
    assert lines[0].startswith("opgen: error: ") and says in lines[0]


def test_a_missing_path_is_a_usage_error(opgen):
    result = opgen("doctor", "nowhere")
    assert result.exit_code == 2 and "does not exist" in result.output
    assert len(result.output.strip().splitlines()) == 1
