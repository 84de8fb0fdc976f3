"""The CUDA toolkit: which one a build uses, its nvcc, and what torch would guess on its own.

The toolkit is chosen the way the generated project's _toolchain.py chooses it, so doctor
names the nvcc a build would really run.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .. import project_toolchain
from .report import ERROR, MISSING, OK, WARNING, Check, combine
from .tools import first_line, read_head, run_tool


def is_cuda_toolkit(path: Path) -> bool:
    """What the generated _toolchain.py takes for a toolkit."""
    return project_toolchain.load().is_cuda_toolkit(path)


@dataclass
class Toolkit:
    home: Path | None = None  # the toolkit a build uses
    via: str = ""  # how it was found
    ignored: list[str] = field(default_factory=list)  # CUDA_HOME=... settings that are not toolkits
    path_nvcc: Path | None = None  # `nvcc` on PATH
    path_nvcc_home: Path | None = None  # the toolkit that nvcc really runs, through wrapper scripts
    path_nvcc_is_wrapper: bool = False


def toolkit_run_by(nvcc: Path) -> tuple[Path | None, bool]:
    """(the toolkit an nvcc on PATH runs, whether it is a wrapper) — through symlinks and scripts."""
    direct = nvcc.resolve().parent.parent
    if is_cuda_toolkit(direct):
        return direct, False
    # A wrapper, such as /usr/local/bin/nvcc here: `exec /usr/local/cuda-13.0/bin/nvcc "$@"`.
    # The real nvcc names its own directory in --dryrun's `#$ _HERE_=` line, however the
    # wrapper finds it (a variable, a module system, a compiled launcher), so it is asked
    # first; the wrapper's text is the fallback for a wrapper that does not pass options on.
    result = run_tool([str(nvcc), "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull])
    if result is not None:
        here = re.search(r"^#\$ _HERE_=(.+)$", result.stdout + result.stderr, re.MULTILINE)
        if here and is_cuda_toolkit(Path(here.group(1).strip()).parent):
            return Path(here.group(1).strip()).parent, True
    head = read_head(nvcc, 65536)
    text = head.decode(errors="replace") if head.startswith(b"#!") else ""
    for candidate in re.findall(r"(/[^\s'\"$;|&()]*)/bin/nvcc\b", text):
        if is_cuda_toolkit(Path(candidate)):
            return Path(candidate), True
    return None, True


def find_toolkit() -> Toolkit:
    """The toolkit the generated _toolchain.py's find_cuda_home picks, and how it got there."""
    toolkit = Toolkit(home=project_toolchain.load().find_cuda_home())
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(variable)
        if value and not is_cuda_toolkit(Path(value)):
            toolkit.ignored.append(f"{variable}={value}")
        elif value and toolkit.home == Path(value) and not toolkit.via:
            toolkit.via = variable
    nvcc = shutil.which("nvcc")
    if nvcc:
        toolkit.path_nvcc = Path(nvcc)
        toolkit.path_nvcc_home, toolkit.path_nvcc_is_wrapper = toolkit_run_by(Path(nvcc))
        on_path = Path(nvcc).resolve().parent.parent
        if toolkit.home is not None and not toolkit.via and on_path == toolkit.home:
            toolkit.via = f"nvcc on PATH, {nvcc}"
    if toolkit.home is not None and not toolkit.via:
        toolkit.via = f"the default {toolkit.home}"
    return toolkit


def nvcc_version(home: Path) -> tuple[int, int] | str:
    """(major, minor) of home's nvcc, or why it could not be told."""
    result = run_tool([str(home / "bin" / "nvcc"), "--version"])
    if result is None:
        return f"{home / 'bin' / 'nvcc'} cannot be run"
    match = re.search(r"release (\d+)\.(\d+)", result.stdout)
    if result.returncode != 0 or not match:
        return f"{home / 'bin' / 'nvcc'} --version fails: {first_line(result.stderr + result.stdout)}"
    return int(match.group(1)), int(match.group(2))


def nvcc_archs(home: Path) -> set[str] | None:
    """The compute capabilities home's nvcc builds, as '75', '90', ...; None if it cannot say."""
    result = run_tool([str(home / "bin" / "nvcc"), "--list-gpu-arch"])
    if result is None or result.returncode != 0:
        return None
    return set(re.findall(r"compute_(\d+)", result.stdout)) or None


def check_nvcc(toolkit: Toolkit, version, probe: dict, gpus: list[dict]) -> Check:
    torch_cuda = probe.get("torch_cuda")
    wanted = f"CUDA {torch_cuda.split('.')[0]}.x" if torch_cuda else "the CUDA toolkit"
    if toolkit.home is None:
        looked = (", ".join(toolkit.ignored) + " not toolkits" if toolkit.ignored
                  else "CUDA_HOME and CUDA_PATH unset")
        looked += (f"; {toolkit.path_nvcc} is no toolkit's" if toolkit.path_nvcc
                   else "; no nvcc on PATH")
        value = f"no CUDA toolkit ({looked}; no /usr/local/cuda): builds are CPU-only"
        fix = (f"export CUDA_HOME={toolkit.path_nvcc_home} (the toolkit the nvcc on PATH runs)"
               if toolkit.path_nvcc_home else f"install {wanted} and export CUDA_HOME=<its directory>")
        # With a GPU visible the generated setup.py stops rather than build CPU-only.
        return Check("nvcc", ERROR if torch_cuda and gpus else MISSING, value, fix)
    nvcc = toolkit.home / "bin" / "nvcc"
    if isinstance(version, str):
        return Check("nvcc", ERROR, version,
                     f"reinstall the CUDA toolkit in {toolkit.home}, or export CUDA_HOME to a working one")
    text = f"{version[0]}.{version[1]} at {nvcc} (from {toolkit.via})"
    if "torch" not in probe:
        return Check("nvcc", OK, f"{text}; not compared with torch's CUDA: torch is not importable")
    if not torch_cuda:
        return Check("nvcc", OK, f"{text}; unused: torch is a CPU-only build")
    major, minor = (int(part) for part in torch_cuda.split(".")[:2])
    if version[0] != major:
        return Check("nvcc", ERROR,
                     f"{text}, but torch is built with CUDA {torch_cuda}: the CUDA kernels cannot be built",
                     f"install CUDA {major}.x and export CUDA_HOME to it, or install a torch built for "
                     f"CUDA {version[0]} (https://pytorch.org/get-started/locally/)")
    if version[1] != minor:
        return Check("nvcc", WARNING,
                     f"{text}; torch is built with CUDA {torch_cuda}: the same major version, so builds "
                     "work, and torch warns about the minor mismatch",
                     f"to match exactly, install CUDA {major}.{minor} and export CUDA_HOME to it")
    return Check("nvcc", OK, f"{text}, as torch's CUDA")


def torch_guess(toolkit: Toolkit) -> Path | None:
    """The CUDA_HOME torch.utils.cpp_extension guesses on its own (its _find_cuda_home)."""
    value = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if value:
        return Path(value)
    if toolkit.path_nvcc:
        return toolkit.path_nvcc.parent.parent  # dirname(dirname(which nvcc)): no symlinks followed
    return Path("/usr/local/cuda") if Path("/usr/local/cuda").exists() else None


def cudart_dir(home: Path) -> Path:
    """Where torch links cudart from: lib64, or lib where lib64 is missing."""
    if not (home / "lib64").exists() and (home / "lib").exists():
        return home / "lib"
    return home / "lib64"


def same_path(a: Path | None, b: Path | None) -> bool:
    return a is not None and b is not None and a.resolve() == b.resolve()


def check_cuda_home(toolkit: Toolkit) -> Check:
    if toolkit.home is None:
        return Check("cuda_home", MISSING, "not checked: no CUDA toolkit (see nvcc)")
    home = toolkit.home
    shown = f"{home} (-> {home.resolve()})" if home.resolve() != home else str(home)
    issues = []
    for setting in toolkit.ignored:
        issues.append((WARNING, f"{setting} is ignored by opgen projects (no bin/nvcc and "
                       "include/cuda_runtime.h there) but used as is by other torch extensions",
                       f"unset {setting.split('=')[0]}, or export {setting.split('=')[0]}={home}"))
    if toolkit.path_nvcc_home and not same_path(toolkit.path_nvcc_home, home):
        issues.append((WARNING, f"builds use {home} (from {toolkit.via}), but the nvcc on PATH, "
                       f"{toolkit.path_nvcc}, runs {toolkit.path_nvcc_home}",
                       f"export CUDA_HOME={toolkit.path_nvcc_home} to build with the nvcc on PATH, "
                       f"or put {home}/bin first on PATH"))
    guess = torch_guess(toolkit)
    if guess is not None and not same_path(guess, home) and not list(cudart_dir(guess).glob("libcudart.so*")):
        if toolkit.path_nvcc_is_wrapper and guess == toolkit.path_nvcc.parent.parent:
            real = toolkit.path_nvcc_home / "bin" / "nvcc" if toolkit.path_nvcc_home else "another nvcc"
            why = (f"{toolkit.path_nvcc} is a wrapper script for {real}, so torch on its own "
                   f"guesses CUDA_HOME={guess}")
        else:
            why = f"torch on its own takes CUDA_HOME={guess}"
        issues.append((WARNING, f"{shown}; {why}, which has no {cudart_dir(guess).name}/libcudart.so: "
                       "torch extensions not made by opgen fail to link (cannot find -lcudart); "
                       "opgen projects resolve the real toolkit themselves",
                       f"export CUDA_HOME={home}"))
    return combine("cuda_home", f"{shown} (from {toolkit.via})", issues)


def check_cudart(toolkit: Toolkit) -> Check:
    if toolkit.home is None:
        return Check("cudart", MISSING, "not checked: no CUDA toolkit (see nvcc)")
    libdir = cudart_dir(toolkit.home)
    found = sorted(p.name for p in libdir.glob("libcudart.so*"))
    if "libcudart.so" in found:
        target = (libdir / "libcudart.so").resolve().name
        arrow = f" -> {target}" if target != "libcudart.so" else ""
        return Check("cudart", OK, f"{libdir}/libcudart.so{arrow}")
    if found:
        return Check("cudart", ERROR,
                     f"{libdir} has {', '.join(found)} but no libcudart.so, which linking with "
                     "-lcudart needs",
                     f"install the toolkit's cudart development files, or: "
                     f"ln -s {found[0]} {libdir}/libcudart.so")
    return Check("cudart", ERROR,
                 f"no libcudart.so in {libdir}: CUDA builds fail to link (cannot find -lcudart)",
                 "export CUDA_HOME to a complete CUDA toolkit (one with lib64/libcudart.so)")
