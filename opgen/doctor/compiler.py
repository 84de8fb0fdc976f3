"""ninja and the host C++ compiler, and how that compiler links libstdc++."""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from pathlib import Path

from .. import project_toolchain
from .report import ERROR, MISSING, OK, WARNING, Check, combine
from .tools import first_line, read_head, run_tool


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
