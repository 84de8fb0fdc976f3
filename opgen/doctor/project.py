"""A generated project: is it one, is it built, and does its build match the installed torch?"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .. import project_toolchain
from ..naming import name_problem
from ..template_source import ANSWERS_FILE, recorded_answers
from .archs import arch_entries, covers, parse_arch
from .report import ERROR, MISSING, OK, WARNING, Check, combine
from .tools import first_line

REBUILD = "pip install --no-build-isolation -e ."


class DoctorError(Exception):
    """doctor cannot run as asked (PATH is not a generated project); the message says what to give."""


def read_build_info(path: Path) -> dict:
    """The constants setup.py wrote into _build_info.py, read without importing it."""
    values = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return values


def project_package(answers: dict) -> str:
    """The project's package name. Answers recorded before `package` replaced `op_name` have
    op_name only, and those projects are still checked. read_project validates it."""
    return answers.get("package") or answers.get("op_name")


def read_project(project: Path) -> dict:
    """The answers a generated project records; DoctorError if it is not one."""
    try:
        answers = recorded_answers(project)
    except Exception as error:  # a YAML error: the file was edited by hand
        raise DoctorError(f"{project / ANSWERS_FILE} cannot be read ({first_line(str(error))}); "
                          "restore it from git") from None
    if not answers or not isinstance(answers, dict):
        raise DoctorError(f"{project} has no {ANSWERS_FILE}, so opgen did not generate it; "
                          "give the directory of a project made by opgen new")
    name = project_package(answers)
    problem = name_problem(name) if isinstance(name, str) else "it is missing"
    if problem:  # the name becomes a path below: never follow one from an edited file
        key = "package" if answers.get("package") else "op_name"
        raise DoctorError(f"{project / ANSWERS_FILE} has no valid {key} ({problem}); restore it from git")
    return answers


def check_project(project: Path, answers: dict, probe: dict, gpus: list[dict]) -> list[Check]:
    name = project_package(answers)
    version = answers.get("_commit", "unknown version")
    if answers.get("inline"):
        return [Check("project", OK, f"{name} at {project}, template {version}; --inline: {name}.py builds "
                      "itself with load_inline when run, so there is no build to check")]
    checks = [Check("project", OK, f"{name} at {project}, template {version}")]
    rebuild = f"cd {project} && {REBUILD}"
    info_file = project / name / "_build_info.py"
    if not info_file.is_file():
        checks.append(Check("build", MISSING, f"not built: {name}/_build_info.py does not exist, so "
                            f"`import {name}` fails", rebuild))
        return checks
    try:
        info = read_build_info(info_file)
    except (OSError, SyntaxError, ValueError):
        info = {}
    if not isinstance(info.get("TORCH_VERSION"), str):
        checks.append(Check("build", ERROR, f"{info_file} is unreadable or has no TORCH_VERSION", rebuild))
        return checks
    built_cuda = info.get("TORCH_CUDA_VERSION")
    with_cuda = info.get("WITH_CUDA")
    archs_text = str(info.get("CUDA_ARCH_LIST") or "")
    kernels = f"CUDA kernels for {archs_text}" if with_cuda else "CPU only"
    value = f"built against torch {info['TORCH_VERSION']} (CUDA {built_cuda}), {kernels}"
    if "torch" not in probe:
        checks.append(Check("build", MISSING, f"{value}; not compared: torch is not importable"))
        return checks
    issues = []
    # The same comparisons, in the same order, as the project's _build_check.py at import.
    target = info.get("STABLE_TARGET")
    if target:  # the stable ABI: any torch from the target on
        value = f"built on the stable ABI for torch >= {'.'.join(map(str, target))}, {kernels}"
        if _release(probe["torch"]) < tuple(target):
            issues.append((ERROR, f"{value}, but torch {probe['torch']} is installed: `import {name}` "
                           "raises ImportError", f"pip install 'torch>={'.'.join(map(str, target))}'"))
        elif with_cuda and probe["torch_cuda"] is None:
            issues.append((ERROR, f"{value}, but this torch has no CUDA: `import {name}` raises "
                           "ImportError", f"cd {project} && USE_CUDA=0 {REBUILD}"))
    elif info["TORCH_VERSION"] != probe["torch"]:
        issues.append((ERROR, f"built against torch {info['TORCH_VERSION']}, but torch {probe['torch']} "
                       f"is installed: `import {name}` raises ImportError", rebuild))
    elif built_cuda != probe["torch_cuda"]:
        issues.append((ERROR, f"built against torch for CUDA {built_cuda}, but this torch is for CUDA "
                       f"{probe['torch_cuda']}: `import {name}` raises ImportError", rebuild))
    libraries = [p for p in (project / name).glob("_C.*") if p.suffix in (".so", ".pyd")]
    if not libraries:
        issues.append((WARNING, f"{value}, but there is no compiled {name}/_C*.so: the build stopped after "
                       "recording (a compile or link error), or it was installed without -e and the copy "
                       "in site-packages is the one used", rebuild))
    else:
        static = [p.name for p in libraries if _lacks_shared_libstdcxx(p)]
        if static:
            issues.append((ERROR, f"{name}/{static[0]} does not need libstdc++.so.6: its compiler linked a "
                           "private copy of libstdc++, and it crashes when an error message formats a "
                           "number", f"cd {project} && CXX=/usr/bin/g++ {REBUILD} (see libstdcxx)"))
        built_at = max(p.stat().st_mtime for p in libraries)
        edited = [p.name for p in sorted((project / "csrc").glob("*")) if p.stat().st_mtime > built_at]
        if edited:
            issues.append((WARNING, f"csrc/{', csrc/'.join(edited)} changed after the last build: the "
                           "library runs the old code",
                           f"cd {project} && python setup.py build_ext --inplace"))
    if info.get("DEBUG"):
        issues.append((WARNING, f"{value}: a debug build ({name.upper()}_DEBUG=1: -G -O0), whose kernels "
                       "are several times slower; fine for cuda-gdb, not for timing or use",
                       f"cd {project} && {REBUILD} (without {name.upper()}_DEBUG)"))
    if gpus and not with_cuda:
        issues.append((WARNING, f"{value}: on the visible GPUs the op raises NotImplementedError",
                       f"{rebuild} where nvcc is found (see nvcc)"))
    elif gpus and with_cuda:
        recorded = archs_text.split(":", 1)[-1]  # "visible GPUs: 8.0;9.0" when built for those
        names = probe.get("arch_names")
        parsed = [parse_arch(entry) for entry in arch_entries(recorded.strip(), names or [])]
        archs = [arch for arch in parsed if arch]
        uncovered = [f"{i}: {g['name']} ({g['capability']})" for i, g in enumerate(gpus)
                     if not covers(archs, g["capability"])]
        # An entry that is no arch may be one of torch's names, when they are unknown.
        if uncovered and (names is not None or all(parsed)):
            issues.append((ERROR, f"{value}: none runs on GPU {', '.join(uncovered)} (no kernel image "
                           "is available)", f"cd {project} && TORCH_CUDA_ARCH_LIST= {REBUILD}"))
    checks.append(combine("build", f"{value}, matching the installed torch", issues))
    return checks


def _release(version: str) -> tuple[int, ...]:
    """(2, 11, 0) of "2.11.0+cu130": the release numbers a version compares by."""
    release = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(n) for n in release.group().split(".")) if release else ()


def _lacks_shared_libstdcxx(library: Path) -> bool:
    try:
        return "libstdc++.so.6" not in project_toolchain.load().needed_libraries(library)
    except (OSError, ValueError):
        return False  # not an ELF file (another platform): nothing to say
