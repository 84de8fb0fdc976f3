"""`opgen doctor`: can this machine build and run custom CUDA ops, and is a project's build current?

Every check has a status:

- ok: nothing to do.
- warning: builds and runs, but slower or with a caveat; the fix says how to remove it.
- error: a build or an import fails, or kernels cannot run on the visible GPUs (exit 1).
- missing: absent but not needed here (no GPU on a build machine, no toolkit where the build
  is CPU-only, a project not built yet), or not checked because what it needs is absent.

torch is probed in a subprocess of the Python that builds (this one, or --python): opgen
itself never imports torch, a torch that crashes at import cannot take doctor down with it,
and a pipx-installed opgen can still check the environment a project is built in.

The CUDA toolkit is chosen the way the generated project's _toolchain.py chooses it, so
doctor names the nvcc a build would really run.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import project_toolchain
from ..naming import name_problem
from ..template_source import ANSWERS_FILE, recorded_answers

OK, WARNING, ERROR, MISSING = "ok", "warning", "error", "missing"
SEVERITY = {ERROR: 0, WARNING: 1, MISSING: 2, OK: 3}
REBUILD = "pip install --no-build-isolation -e ."
GIB = 1024**3
# Peak memory of one nvcc or cc1plus process compiling a torch extension source is about
# 1.5-2 GB (torch's headers are large); planned with the upper end, because running out
# means the OOM killer ends the build with no clear message.
JOB_MEMORY = 2 * GIB
# torch.utils.cpp_extension's arch group names (torch 2.15), expanded as it expands them:
# in this order, combined names first, since "Ampere" is a prefix of "Ampere+Tegra".
NAMED_ARCHES = {
    "Kepler+Tesla": "3.7", "Kepler": "3.5+PTX", "Maxwell+Tegra": "5.3", "Maxwell": "5.0;5.2+PTX",
    "Pascal": "6.0;6.1+PTX", "Volta+Tegra": "7.2", "Volta": "7.0+PTX", "Turing": "7.5+PTX",
    "Ampere+Tegra": "8.7", "Ampere": "8.0;8.6+PTX", "Ada": "8.9+PTX", "Hopper": "9.0+PTX",
    "Blackwell+Tegra": "11.0", "Blackwell": "10.0;10.3;12.0;12.1+PTX", "Rubin": "10.7+PTX",
}
# What torch accepts in TORCH_CUDA_ARCH_LIST: major.minor, "a" for arch-specific features,
# "+PTX" to also embed PTX.
_ARCH = re.compile(r"(\d+)\.(\d+)(a?)(\+PTX)?")
TOOL_TIMEOUT = 60  # seconds for nvcc, the compiler, ninja, nvidia-smi
PROBE_TIMEOUT = 300  # importing torch on a cold disk can take a while

# Run in the Python that builds. Two lines, so that a crash while importing torch (a
# segfault in a CUDA library) still leaves what was learnt before it.
PROBE = r"""
import json, sys, sysconfig
info = {"python": sys.version.split()[0], "executable": sys.executable,
        "cxx": sysconfig.get_config_var("CXX") or "", "scripts": sysconfig.get_path("scripts")}
print("OPGEN-PYTHON " + json.dumps(info), flush=True)
info = {}
try:
    import torch
except BaseException as error:
    info["torch_error"] = (type(error).__name__ + ": " + str(error)).splitlines()[0]
else:
    info["torch"] = torch.__version__
    info["torch_cuda"] = torch.version.cuda
    try:
        info["gpus"] = [{"name": torch.cuda.get_device_name(i),
                         "capability": "%d.%d" % torch.cuda.get_device_capability(i)}
                        for i in range(torch.cuda.device_count())]
    except Exception as error:
        info["gpu_error"] = (type(error).__name__ + ": " + str(error)).splitlines()[0]
    try:  # the libstdc++ torch loaded, which opgen projects name on their link line
        with open("/proc/self/maps") as maps:
            info["libstdcxx"] = next(line.split(None, 5)[5].strip() for line in maps
                                     if line.rsplit("/", 1)[-1].startswith("libstdc++.so"))
    except Exception:
        pass
    import os
    if os.environ.get("TORCH_CUDA_ARCH_LIST") and torch.version.cuda:
        try:  # torch's own verdict on the list; private, so any other failure is ignored
            from torch.utils.cpp_extension import _get_cuda_arch_flags
            _get_cuda_arch_flags()
        except ValueError as error:
            info["arch_error"] = str(error).splitlines()[0]
        except Exception:
            pass
print("OPGEN-TORCH " + json.dumps(info), flush=True)
"""


@dataclass
class Check:
    name: str
    status: str
    value: str
    fix: str = ""


class DoctorError(Exception):
    """doctor cannot run as asked (PATH is not a generated project); the message says what to give."""


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(check.status == status for check in self.checks)

    @property
    def exit_code(self) -> int:
        return 1 if self.count(ERROR) else 0

    def summary(self) -> str:
        errors, warnings = self.count(ERROR), self.count(WARNING)
        counts = f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
        if errors:
            return f"{counts}: fix the errors before building (exit status 1)"
        return f"{counts}: nothing blocks a build"

    def as_json(self) -> str:
        return json.dumps({"ok": not self.count(ERROR), "errors": self.count(ERROR),
                           "warnings": self.count(WARNING),
                           "checks": [asdict(check) for check in self.checks]}, indent=2)

    def as_text(self) -> str:
        width = max(len(check.name) for check in self.checks)
        lines = [f"{'check':<{width}}  {'status':<7}  value"]
        for check in self.checks:
            lines.append(f"{check.name:<{width}}  {check.status:<7}  {check.value}")
            if check.fix:
                lines.append(f"{'':<{width}}  {'':<7}  fix: {check.fix}")
        return "\n".join([*lines, "", self.summary()])


def run_tool(command: list[str], timeout: int = TOOL_TIMEOUT) -> subprocess.CompletedProcess | None:
    """Run a tool, stdout and stderr as text; None if it cannot be started or hangs."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


# --- the Python that builds, and its torch ---------------------------------------------


def probe_python(python: str) -> dict:
    """What `python` reports about itself and its torch (see PROBE)."""
    info: dict = {}
    try:
        result = subprocess.run([python, "-c", PROBE], capture_output=True, text=True,
                                timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        return {"error": f"{python} cannot be run ({error})"}
    for line in result.stdout.splitlines():
        for tag in ("OPGEN-PYTHON ", "OPGEN-TORCH "):
            if line.startswith(tag):
                info.update(json.loads(line[len(tag):]))
    if "python" not in info:
        return {"error": f"{python} cannot be run: {first_line(result.stderr) or 'no output'}"}
    if "torch" not in info and "torch_error" not in info:
        how = f"signal {-result.returncode}" if result.returncode < 0 else f"exit status {result.returncode}"
        last = (result.stderr.strip().splitlines() or [""])[-1]
        info["torch_error"] = f"import torch killed Python ({how}){': ' + last if last else ''}"
        info["torch_crashed"] = True
    return info


def check_python(probe: dict, python: str) -> Check:
    if "python" not in probe:
        return Check("python", ERROR, probe["error"],
                     f"pass --python a working interpreter, e.g. --python {sys.executable}")
    version = tuple(int(part) for part in re.findall(r"\d+", probe["python"])[:2])
    value = f"{probe['python']} at {probe['executable']}"
    if version < (3, 9):
        return Check("python", ERROR, value + ": generated projects need Python 3.9 or newer",
                     "use Python 3.10 or newer, with a torch built for it")
    return Check("python", OK, value)


def check_torch(probe: dict, python: str) -> Check:
    if "torch" in probe:
        return Check("torch", OK, probe["torch"])
    where = "" if python == sys.executable else f" (checked with --python {python})"
    if "python" not in probe:
        return Check("torch", MISSING, f"not checked: the Python could not be run{where}")
    error = probe["torch_error"]
    if error.startswith("ModuleNotFoundError") and "'torch'" in error:
        value = f"not installed for {probe['executable']}{where}; everything else is still checked"
        fix = (f"{python} -m pip install torch (a CUDA build: https://pytorch.org/get-started/locally/); "
               "if your project uses another Python, pass it with --python")
    elif probe.get("torch_crashed"):
        value = f"{error}{where}"
        fix = f"reinstall torch: {python} -m pip install --force-reinstall torch"
    else:
        value = f"import torch fails: {error}{where}"
        fix = f"reinstall torch: {python} -m pip install --force-reinstall torch"
    return Check("torch", ERROR, value, fix)


def check_torch_cuda(probe: dict) -> Check:
    if "torch" not in probe:
        return Check("torch_cuda", MISSING, "not checked: torch is not importable")
    if probe["torch_cuda"] is None:
        return Check("torch_cuda", WARNING,
                     f"none: torch {probe['torch']} is a CPU-only build, so projects build and run on "
                     "the CPU only",
                     "for CUDA kernels install a CUDA build of torch (https://pytorch.org/get-started/locally/)")
    return Check("torch_cuda", OK, probe["torch_cuda"])


# --- the CUDA toolkit --------------------------------------------------------------------


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


def read_head(path: Path, size: int) -> bytes:
    """The first `size` bytes of a file (b"" if unreadable): enough to tell a script."""
    try:
        with open(path, "rb") as file:
            return file.read(size)
    except OSError:
        return b""


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


def combine(name: str, ok_value: str, issues: list[tuple[str, str, str]], context: str = "") -> Check:
    """One check from (status, value, fix) issues, the worst first; ok_value if there are none.

    `context` (what was found) leads the value when there are issues.
    """
    if not issues:
        return Check(name, OK, ok_value)
    issues = sorted(issues, key=lambda issue: SEVERITY[issue[0]])
    fixes: list[str] = []
    for fix in (issue[2] for issue in issues if issue[2]):
        # One fix often holds another ("unset X, or export X=..." and "export X=..."): say it once.
        if not any(fix in kept for kept in fixes):
            fixes = [kept for kept in fixes if kept not in fix] + [fix]
    return Check(name, issues[0][0], "; ".join([context] * bool(context) + [issue[1] for issue in issues]),
                 "; ".join(fixes))


def dotted(arch: str) -> str:
    """nvcc's '90' or '121' as torch writes it: '9.0', '12.1'."""
    return f"{arch[:-1]}.{arch[-1]}"


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


# --- ninja and the host compiler ---------------------------------------------------------


def check_ninja(probe: dict, python: str) -> Check:
    # torch looks for ninja exactly so: `ninja --version` on PATH.
    ninja = shutil.which("ninja")
    result = run_tool([ninja, "--version"]) if ninja else None
    if result is not None and result.returncode == 0:
        return Check("ninja", OK, f"{first_line(result.stdout)} at {ninja}")
    found = "not on PATH" if not ninja else f"{ninja} does not run"
    value = (f"{found}: torch then compiles with setuptools, one file at a time and every file "
             "again on each rebuild (builds take many times longer), and JIT builds refuse to run")
    scripts = probe.get("scripts")
    if scripts and (Path(scripts) / "ninja").is_file() and os.access(Path(scripts) / "ninja", os.X_OK):
        return Check("ninja", WARNING, value,
                     f"export PATH={scripts}:$PATH (ninja is installed there, but torch looks on PATH)")
    return Check("ninja", WARNING, value, f"{python} -m pip install ninja")


def host_compilers(probe: dict) -> list[tuple[str, list[str]]]:
    """(what it does, command) for each C++ compiler driver a torch extension build runs.

    torch compiles with $CXX, else `c++`; setuptools links C++ extensions with $CXX, else
    the CXX Python was configured with (usually `g++`). The two can be different programs
    (a g++ wrapper early on PATH), so both are checked.
    """
    if os.environ.get("CXX"):
        return [("compiles and links", shlex.split(os.environ["CXX"]))]
    linker = shlex.split(probe.get("cxx") or "g++")[:1] or ["g++"]
    compile_exe, link_exe = shutil.which("c++"), shutil.which(linker[0])
    if compile_exe and link_exe and Path(compile_exe).resolve() == Path(link_exe).resolve():
        return [("compiles and links", ["c++"])]
    return [("compiles", ["c++"]), ("links", linker)]


def check_cxx(compilers: list[tuple[str, list[str]]]) -> Check:
    parts, issues = [], []
    for role, command in compilers:
        exe = shutil.which(command[0]) if command else None
        if exe is None:
            issues.append((ERROR, f"{command[0] if command else '(empty CXX)'} not found: extensions cannot "
                           "be compiled", "install a C++ compiler (e.g. apt-get install g++) or export "
                           "CXX=/path/to/g++"))
            continue
        result = run_tool([*command, "--version"])
        if result is None or result.returncode != 0:
            issues.append((ERROR, f"{' '.join(command)} --version fails", "export CXX to a working g++"))
            continue
        resolved = Path(exe).resolve()
        shown = exe if resolved == Path(exe) else f"{exe} -> {resolved}"
        parts.append(f"{' '.join(command)} ({role}): {shown}, {first_line(result.stdout)}")
    return combine("cxx", "; ".join(parts), issues, context="; ".join(parts))


# Uses out-of-line libstdc++ code (std::runtime_error, throwing): a library that needs none
# would say nothing about how libstdc++ is linked, where the linker passes --as-needed.
PROBE_LIBRARY_SOURCE = """#include <stdexcept>
#include <string>
extern "C" int opgen_probe(int n) {
  try {
    throw std::runtime_error("n = " + std::to_string(n));
  } catch (const std::exception& error) {
    return static_cast<int>(std::string(error.what()).size());
  }
}
"""


def libraries_linked_by(command: list[str], extra: list[str]) -> list[str] | None:
    """The NEEDED entries of a small C++ shared library that `command` links, or None if it fails.

    What a build gets is decided by what the linker makes, not by reading flags: a wrapper
    can put first, with -B, a directory holding only libstdc++.a, which no flag reveals.
    The ELF file is read by the generated projects' own reader (_toolchain.py).
    """
    with tempfile.TemporaryDirectory(prefix="opgen-doctor-") as tmp:
        source, library = Path(tmp) / "probe.cpp", Path(tmp) / "probe.so"
        source.write_text(PROBE_LIBRARY_SOURCE)
        result = run_tool([*command, "-shared", "-fPIC", str(source), "-o", str(library), *extra])
        if result is None or result.returncode != 0 or not library.is_file():
            return None
        try:
            return project_toolchain.load().needed_libraries(library)
        except (OSError, ValueError):
            return None


def links_shared_libstdcxx(command: list[str], extra: list[str]) -> bool | None:
    needed = libraries_linked_by(command, extra)
    return None if needed is None else "libstdc++.so.6" in needed


def clean_alternative(bad: set[Path]) -> str | None:
    """A g++ on this machine that links libstdc++ dynamically, for the fix."""
    for candidate in ("/usr/bin/g++", "/usr/bin/c++", shutil.which("g++"), shutil.which("c++")):
        if (candidate and Path(candidate).is_file() and Path(candidate).resolve() not in bad
                and links_shared_libstdcxx([candidate], []) is True):
            return candidate
    return None


def check_libstdcxx(compilers: list[tuple[str, list[str]]], probe: dict) -> Check:
    found = [(role, command) for role, command in compilers if command and shutil.which(command[0])]
    if not found:
        return Check("libstdcxx", MISSING, "not checked: no C++ compiler (see cxx)")
    ldflags = shlex.split(os.environ.get("LDFLAGS", ""))  # setuptools adds them to the link
    torch_libstdcxx = probe.get("libstdcxx")
    issues, bad = [], set()
    for _, command in found:
        shared = links_shared_libstdcxx(command, ldflags)
        exe = Path(shutil.which(command[0]))
        label = " ".join(command) if str(exe) == command[0] else f"{' '.join(command)} ({exe})"
        if shared is None:
            issues.append((WARNING, f"could not tell how {label} links libstdc++: it failed to link "
                           "a small C++ shared library", f"check by hand: {' '.join(command)} -shared "
                           "-fPIC probe.cpp -o probe.so, then readelf -d probe.so | grep NEEDED"))
            continue
        if shared:
            continue
        from_ldflags = bool(ldflags) and links_shared_libstdcxx(command, []) is True
        if not from_ldflags:
            bad.add(exe.resolve())
        kind = "a wrapper script" if read_head(exe, 2) == b"#!" else "a compiler"
        cause = f"with LDFLAGS={os.environ.get('LDFLAGS')!r}" if from_ldflags else kind
        if torch_libstdcxx and links_shared_libstdcxx(command, [*ldflags, torch_libstdcxx]):
            opgen = (f"projects made by this opgen name torch's {torch_libstdcxx} on their link line "
                     "and are safe, other extensions are not")
        else:
            opgen = "opgen projects refuse to install such a library"
        issues.append((ERROR, f"{label}, {cause}, links libstdc++ statically: a shared library it "
                       "links does not need libstdc++.so.6, so each extension carries its own C++ "
                       "runtime beside torch's and crashes (a segfault when an error message formats "
                       f"a number); {opgen}",
                       "remove -static-libstdc++ from LDFLAGS" if from_ldflags else ""))
    if bad:
        alternative = clean_alternative(bad)
        fix = (f"export CXX={alternative}" if alternative else
               "export CXX to a g++ that links libstdc++ dynamically (drop -static-libstdc++ or a -B "
               "directory holding only libstdc++.a from its wrapper)")
        issues = [(s, v, f or fix) for s, v, f in issues]
    names = " and ".join(" ".join(command) for _, command in found)
    verb = "link" if len(found) > 1 else "links"
    return combine("libstdcxx", f"{names} {verb} libstdc++ dynamically, sharing torch's", issues)


# --- GPUs, archs, parallel jobs ----------------------------------------------------------


def nvidia_smi_gpus() -> list[dict] | None:
    """GPUs as nvidia-smi lists them; None without nvidia-smi or when it fails."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    result = run_tool([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"])
    if result is None or result.returncode != 0:
        return None
    gpus = []
    for line in result.stdout.splitlines():
        name, _, capability = line.rpartition(",")
        if name.strip():
            gpus.append({"name": name.strip(), "capability": capability.strip()})
    return gpus


def check_gpus(probe: dict) -> tuple[Check, list[dict]]:
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    note = f" (CUDA_VISIBLE_DEVICES={hidden!r})" if hidden is not None else ""
    if "gpu_error" in probe:
        return Check("gpus", WARNING, f"torch.cuda fails: {probe['gpu_error']}{note}",
                     "check the NVIDIA driver with nvidia-smi"), []
    gpus = probe.get("gpus") if "torch" in probe else None
    smi = nvidia_smi_gpus()
    listed = ", ".join(f"{i}: {g['name']} ({g['capability']})" for i, g in enumerate(gpus or smi or []))
    if gpus:
        return Check("gpus", OK, listed + note), gpus
    if "torch" in probe and smi:
        return Check("gpus", WARNING,
                     f"torch sees no GPU, but nvidia-smi lists {listed}{note}",
                     f"install a driver that supports CUDA {probe.get('torch_cuda')} (nvidia-smi's "
                     "header shows the CUDA version the driver supports), and check "
                     "CUDA_VISIBLE_DEVICES"), []
    if smi:
        return Check("gpus", OK, f"{listed} (from nvidia-smi: torch is not importable){note}"), smi
    how = "torch sees none" if "torch" in probe else "torch is not importable, and nvidia-smi " + (
        "lists none" if smi is not None else "is not installed")
    return Check("gpus", MISSING,
                 f"no GPU visible ({how}){note}: builds use TORCH_CUDA_ARCH_LIST or the default archs, "
                 "tests run on the CPU", "CUDA tests need a machine with an NVIDIA GPU and its driver"), []


def parse_arch(entry: str) -> tuple[int, int, bool, bool] | None:
    """'9.0a+PTX' -> (9, 0, arch-specific, with PTX); None if torch would refuse it."""
    match = _ARCH.fullmatch(entry)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), bool(match.group(3)), bool(match.group(4))


def arch_entries(text: str) -> list[str]:
    """TORCH_CUDA_ARCH_LIST split as torch splits it: spaces are ';', names are expanded."""
    text = text.replace(" ", ";")
    for name, archs in NAMED_ARCHES.items():
        text = text.replace(name, archs)
    return text.split(";")


def covers(archs: list[tuple[int, int, bool, bool]], capability: str) -> bool:
    """Whether code built for `archs` runs on a GPU of `capability` ('8.6')."""
    try:
        major, minor = (int(part) for part in capability.split("."))
    except ValueError:
        return True  # unknown capability (an old nvidia-smi): cannot tell, do not cry wolf
    for arch_major, arch_minor, specific, ptx in archs:
        if (arch_major, arch_minor) == (major, minor):
            return True
        if specific:
            continue  # 9.0a code uses features only 9.0 has
        if arch_major == major and arch_minor <= minor:
            return True  # machine code runs on later GPUs of the same major version
        if ptx and (arch_major, arch_minor) <= (major, minor):
            return True  # the driver compiles PTX for newer GPUs
    return False


def check_arch_list(probe: dict, gpus: list[dict], toolkit: Toolkit, supported: set[str] | None,
                    nvcc: str) -> Check:
    raw = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    if not raw or raw == "native":
        if gpus:
            caps = sorted({gpu["capability"] for gpu in gpus})
            unbuildable = [c for c in caps if supported and c.replace(".", "") not in supported]
            if unbuildable:
                return Check("arch_list", ERROR,
                             f"unset: torch builds for the visible GPUs ({', '.join(caps)}), but "
                             f"{nvcc} cannot build {', '.join(unbuildable)}",
                             "install a CUDA toolkit new enough for these GPUs")
            return Check("arch_list", OK, f"unset: torch builds for the visible GPUs ({', '.join(caps)})")
        if toolkit.home is None or supported is None:
            return Check("arch_list", OK, "unset, and no GPU visible")
        default_archs = project_toolchain.load().DEFAULT_CUDA_ARCHS
        defaults = [a for a in default_archs if a.replace(".", "") in supported]
        if not defaults:
            return Check("arch_list", ERROR,
                         f"unset, no GPU visible, and {nvcc} builds none of opgen's defaults "
                         f"{';'.join(default_archs)}: the generated setup.py stops",
                         f"export TORCH_CUDA_ARCH_LIST='{dotted(max(supported, key=int))}+PTX'")
        shown = ";".join(defaults[:-1] + [defaults[-1] + "+PTX"])
        return Check("arch_list", OK, f"unset, no GPU visible: opgen projects build {shown}")
    entries = arch_entries(raw)
    parsed = [(entry, parse_arch(entry)) for entry in entries]
    good = [(entry, arch) for entry, arch in parsed if arch is not None]
    issues = []
    bad = [entry for entry, arch in parsed if arch is None]
    if bad:
        shown = ", ".join(repr(entry) for entry in bad)
        issues.append((ERROR, f"{shown} {'is not an arch' if len(bad) == 1 else 'are not archs'} "
                       "(torch fails: Unknown CUDA arch; an empty entry is a stray ';' or space)", ""))
    if supported is not None:
        unbuildable = [entry for entry, (major, minor, _, _) in good if f"{major}{minor}" not in supported]
        if unbuildable:
            issues.append((ERROR, f"{nvcc} cannot build {', '.join(unbuildable)} (it builds "
                           f"{dotted(min(supported, key=int))} to {dotted(max(supported, key=int))})", ""))
            good = [(e, a) for e, a in good if e not in unbuildable]
    if probe.get("arch_error") and not issues:
        issues.append((ERROR, f"torch refuses it: {probe['arch_error']}", ""))
    archs = [arch for _, arch in good]
    uncovered = [f"{i}: {gpu['name']} ({gpu['capability']})" for i, gpu in enumerate(gpus)
                 if not covers(archs, gpu["capability"])]
    if uncovered:
        issues.append((ERROR, f"it covers no arch of GPU {', '.join(uncovered)}: its kernels fail with "
                       "'no kernel image is available for execution on the device'", ""))
    if issues:
        # The entries that work, plus the visible GPUs they miss.
        keep = [entry for entry, _ in good]
        keep += [gpu["capability"] for gpu in gpus if not covers(archs, gpu["capability"])]
        suggestion = ";".join(dict.fromkeys(keep)) or "7.5;8.0;9.0+PTX"
        fix = (f"export TORCH_CUDA_ARCH_LIST='{suggestion}' (entries like 8.0 or 9.0+PTX, "
               "';'-separated), or unset it")
        issues = [(status, value, fix) for status, value, _ in issues]
    covered = ", covers every visible GPU" if gpus else ""
    return combine("arch_list", f"{raw!r}{covered}", issues, context=f"{raw!r}")


def available_memory() -> int | None:
    """Bytes a build can use now: MemAvailable, capped by a cgroup memory limit (containers)."""
    values = []
    try:
        match = re.search(r"^MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.MULTILINE)
        if match:
            values.append(int(match.group(1)) * 1024)
    except OSError:
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit = Path(limit_file).read_text().strip()
            usage = int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # v1 writes a huge number for "no limit"
            values.append(max(0, int(limit) - usage))
    if not values and hasattr(os, "sysconf"):
        try:
            values.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError):
            pass
    return min(values) if values else None


def cpu_count() -> int:
    """CPUs this process may run on (what ninja counts), not every CPU of the machine."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def ninja_default_jobs(cpus: int) -> int:
    """ninja's own -j default (GuessParallelism), used when MAX_JOBS is unset."""
    return 2 if cpus <= 1 else 3 if cpus == 2 else cpus + 2


def check_max_jobs() -> Check:
    raw = os.environ.get("MAX_JOBS")
    cpus = cpu_count()
    issues = []
    if raw is not None and raw.isdigit() and int(raw) > 0:
        jobs, how = int(raw), f"MAX_JOBS={raw}"
    elif raw == "0" or (raw is not None and raw.isdigit()):
        jobs, how = 1 << 30, "MAX_JOBS=0"  # torch passes -j 0, which ninja takes as no limit
    else:
        jobs, how = ninja_default_jobs(cpus), f"ninja's default for {cpus} CPU{'s' * (cpus != 1)}"
        if raw is not None:
            issues.append((WARNING, f"MAX_JOBS={raw!r} is not a number, so torch ignores it", ""))
    memory = available_memory()
    shown = "no limit" if jobs == 1 << 30 else str(jobs)
    if memory is None:
        return combine("max_jobs", f"{shown} parallel compile jobs ({how}); available memory unknown", issues)
    fits = memory // JOB_MEMORY
    if jobs > fits:
        needs = "any number of" if jobs == 1 << 30 else f"{jobs} ×"
        issues.append((WARNING, f"{shown} parallel compile jobs ({how}) need {needs} ~2 GB, and "
                       f"{memory / GIB:.1f} GB is available: the OOM killer may stop the build", ""))
    if issues:
        # As many jobs as both the memory and the CPUs allow: more than the CPUs gains nothing.
        fix = f"export MAX_JOBS={max(1, min(fits, cpus))}" + (" and free some memory" if fits < 1 else "")
        issues[-1] = (issues[-1][0], issues[-1][1], fix)
    return combine("max_jobs", f"{shown} parallel compile jobs ({how}); {memory / GIB:.1f} GB available, "
                   f"room for {fits} at ~2 GB each", issues)


# --- a generated project ------------------------------------------------------------------


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
    name = answers.get("op_name")
    problem = name_problem(name) if isinstance(name, str) else "it is missing"
    if problem:  # the name becomes a path below: never follow one from an edited file
        raise DoctorError(f"{project / ANSWERS_FILE} has no valid op_name ({problem}); restore it from git")
    return answers


def check_project(project: Path, answers: dict, probe: dict, gpus: list[dict]) -> list[Check]:
    name = answers["op_name"]
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
    if info["TORCH_VERSION"] != probe["torch"]:
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
    if gpus and not with_cuda:
        issues.append((WARNING, f"{value}: on the visible GPUs the op raises NotImplementedError",
                       f"{rebuild} where nvcc is found (see nvcc)"))
    elif gpus and with_cuda:
        recorded = archs_text.split(":", 1)[-1]  # "visible GPUs: 8.0;9.0" when built for those
        archs = [arch for arch in map(parse_arch, arch_entries(recorded.strip())) if arch]
        uncovered = [f"{i}: {g['name']} ({g['capability']})" for i, g in enumerate(gpus)
                     if not covers(archs, g["capability"])]
        if uncovered:
            issues.append((ERROR, f"{value}: none runs on GPU {', '.join(uncovered)} (no kernel image "
                           "is available)", f"cd {project} && TORCH_CUDA_ARCH_LIST= {REBUILD}"))
    checks.append(combine("build", f"{value}, matching the installed torch", issues))
    return checks


def _lacks_shared_libstdcxx(library: Path) -> bool:
    try:
        return "libstdc++.so.6" not in project_toolchain.load().needed_libraries(library)
    except (OSError, ValueError):
        return False  # not an ELF file (another platform): nothing to say


# --- all of it ---------------------------------------------------------------------------


def diagnose(project: Path | None = None, python: str | None = None) -> Report:
    """Every check, in the order they are shown. Raises DoctorError for a PATH that is no project."""
    python = python or sys.executable
    report = Report()
    answers = read_project(project) if project is not None else {}  # usage errors before slow checks
    probe = probe_python(python)
    gpu_check, gpus = check_gpus(probe)
    toolkit = find_toolkit()
    version = nvcc_version(toolkit.home) if toolkit.home else None
    supported = nvcc_archs(toolkit.home) if toolkit.home and not isinstance(version, str) else None
    nvcc_name = f"nvcc {version[0]}.{version[1]}" if isinstance(version, tuple) else "nvcc"
    compilers = host_compilers(probe)
    report.checks += [
        check_python(probe, python),
        check_torch(probe, python),
        check_torch_cuda(probe),
        check_nvcc(toolkit, version, probe, gpus),
        check_cuda_home(toolkit),
        check_cudart(toolkit),
        check_ninja(probe, python),
        check_cxx(compilers),
        check_libstdcxx(compilers, probe),
        gpu_check,
        check_arch_list(probe, gpus, toolkit, supported, nvcc_name),
        check_max_jobs(),
    ]
    if project is not None:
        report.checks += check_project(project, answers, probe, gpus)
    return report
