"""How this package is compiled: the CUDA toolkit, the archs and the flags.

Shared by setup.py (ahead-of-time builds) and _jit.py (builds at import); it imports
nothing from the package and torch only where a function takes it.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

# The package this file is in: the op project's name, for messages.
NAME = Path(__file__).resolve().parent.name
# -g0: Python's own CFLAGS carry -g, which makes the C++ compile a third slower.
# -Wno-unknown-pragmas: torch's at::vec headers (the CPU's AVX2 loops) carry `#pragma unroll`,
# which GCC does not know; it would print a warning for each, in every build.
CXX_FLAGS = ["-O3", "-g0", "-Wno-unknown-pragmas"]
# -lineinfo maps kernel code to source lines in compute-sanitizer and profilers;
# --threads 0 compiles the archs in parallel.
NVCC_FLAGS = ["-O3", "-lineinfo", "--threads", "0"]
# For ops whose CPU and CUDA results must agree bit for bit (setup.py's EXACT): no fused
# multiply-adds, which round once where the CPU rounds twice.
EXACT_NVCC_FLAGS = ["--fmad=false"]
# A debug build, for stepping through the code in cuda-gdb or gdb: set this variable to 1
# for pip, setup.py, the JIT build and a one-file op alike. Device code gets -G (no
# optimization, every variable kept, each source line a place to stop), host code -O0 -g.
# The kernels are several times slower: never benchmark a debug build.
DEBUG_VARIABLE = NAME.upper() + "_DEBUG"
DEBUG_CXX_FLAGS = ["-O0", "-g", "-Wno-unknown-pragmas"]
DEBUG_NVCC_FLAGS = ["-G", "-g", "-O0", "--threads", "0"]
# Built when no GPU is visible and TORCH_CUDA_ARCH_LIST is unset: machine code for
# Turing, Ampere (and Ada) and Hopper, plus PTX that the driver compiles for newer GPUs
# (Blackwell) at first use. Each arch adds a third of a second or more to every rebuild.
DEFAULT_CUDA_ARCHS = ["7.5", "8.0", "9.0"]


def say(message: str) -> None:
    print(f"{NAME}: {message}", file=sys.stderr)


def is_cuda_toolkit(path: Path) -> bool:
    return (path / "bin" / "nvcc").is_file() and (path / "include" / "cuda_runtime.h").is_file()


def find_cuda_home() -> Path | None:
    """CUDA_HOME (or CUDA_PATH), else the toolkit of the nvcc on PATH, else /usr/local/cuda.

    torch guesses dirname(dirname(which nvcc)). Where nvcc is a wrapper script, for
    example /usr/local/bin/nvcc, that guess is /usr/local and linking fails with
    "cannot find -lcudart"; so every candidate must hold a toolkit to be taken.
    """
    candidates = []
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            path = Path(os.environ[variable])
            if is_cuda_toolkit(path):
                return path
            say(f"ignoring {variable}={path}: it has no bin/nvcc and include/cuda_runtime.h")
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(Path(nvcc).resolve().parent.parent)
    candidates.append(Path("/usr/local/cuda"))
    return next((path for path in candidates if is_cuda_toolkit(path)), None)


def nvcc_output(cuda_home: Path, *args: str) -> str:
    return subprocess.run(
        [str(cuda_home / "bin" / "nvcc"), *args], capture_output=True, text=True, check=True
    ).stdout


def nvcc_version(cuda_home: Path) -> str:
    match = re.search(r"release (\d+\.\d+)", nvcc_output(cuda_home, "--version"))
    return match.group(1) if match else "unknown"


# TORCH_CUDA_ARCH_LIST entries torch understands: major.minor, "a" or "f" for arch- or
# family-specific features, "+PTX" to embed PTX too; or one of torch's named groups.
ARCH_ENTRY = re.compile(r"(\d+)\.(\d+)[af]?(\+PTX)?")
NAMED_ARCHS = (
    "Kepler+Tesla",
    "Kepler",
    "Maxwell+Tegra",
    "Maxwell",
    "Pascal",
    "Volta+Tegra",
    "Volta",
    "Turing",
    "Ampere+Tegra",
    "Ampere",
    "Ada",
    "Hopper",
    "Blackwell+Tegra",
    "Blackwell",
)


def check_arch_list(cuda_home: Path, value: str) -> None:
    """Stop in one line on a TORCH_CUDA_ARCH_LIST this nvcc cannot build (not a traceback)."""
    supported = set(re.findall(r"compute_(\d+)", nvcc_output(cuda_home, "--list-gpu-arch")))
    for entry in re.split(r"[;\s]+", value.strip()):
        match = ARCH_ENTRY.fullmatch(entry)
        if entry in NAMED_ARCHS or (match and match.group(1) + match.group(2) in supported):
            continue
        why = "is not an arch this nvcc builds" if match else "is not an arch"
        buildable = ";".join(f"{a[:-1]}.{a[-1]}" for a in sorted(supported, key=int))
        raise SystemExit(
            f"{NAME}: error: TORCH_CUDA_ARCH_LIST={value!r}: {entry!r} {why}; give entries such "
            f"as '8.0;9.0+PTX' from what nvcc {nvcc_version(cuda_home)} builds ({buildable}), "
            "or unset it"
        )


def check_compiler() -> None:
    """Stop in one line where CXX names a compiler that does not run (not a traceback)."""
    compiler = os.environ.get("CXX", "").strip()
    if not compiler:
        return
    try:
        result = subprocess.run(
            [*shlex.split(compiler), "--version"], capture_output=True, text=True, timeout=60
        )
        problem = None if result.returncode == 0 else f"--version exits with {result.returncode}"
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        problem = getattr(error, "strerror", None) or str(error)
    if problem:
        raise SystemExit(
            f"{NAME}: error: CXX={compiler!r} does not run ({problem}); set CXX to a C++ "
            "compiler, e.g. CXX=/usr/bin/g++, or unset it"
        )


def default_arch_list(cuda_home: Path) -> str:
    """DEFAULT_CUDA_ARCHS that this nvcc can build, the newest also as PTX."""
    supported = set(re.findall(r"compute_(\d+)", nvcc_output(cuda_home, "--list-gpu-arch")))
    archs = [arch for arch in DEFAULT_CUDA_ARCHS if arch.replace(".", "") in supported]
    if not archs:
        raise SystemExit(
            f"{NAME}: error: nvcc in {cuda_home} supports none of {DEFAULT_CUDA_ARCHS}; "
            "set TORCH_CUDA_ARCH_LIST to archs it supports"
        )
    return ";".join(archs[:-1] + [archs[-1] + "+PTX"])


def cuda_build_plan(torch) -> tuple[Path | None, str]:
    """(toolkit to build the CUDA kernels with, or None; why not, when None)."""
    if os.environ.get("USE_CUDA", "") == "0":
        return None, "USE_CUDA=0"
    cuda_home = find_cuda_home()
    if torch.version.cuda is None:
        return None, f"torch {torch.__version__} is a CPU-only build"
    if cuda_home is None:
        return None, "no CUDA toolkit was found (set CUDA_HOME to a directory with bin/nvcc)"
    nvcc = nvcc_version(cuda_home)
    if nvcc.split(".")[0] != torch.version.cuda.split(".")[0]:
        return None, (
            f"nvcc {nvcc} in {cuda_home} does not match torch's CUDA {torch.version.cuda}; "
            f"install CUDA {torch.version.cuda.split('.')[0]}.x and set CUDA_HOME to it"
        )
    return cuda_home, ""


def prepare_cuda(torch, announce: bool = True) -> tuple[Path | None, str]:
    """Decide whether to build the CUDA kernels and set up the environment to do so.

    Returns (toolkit, arch list) or (None, "") for a CPU-only build, saying why in one line.
    Stops with an error where CUDA is wanted (USE_CUDA=1, or a visible GPU) but cannot be
    built. Sets CUDA_HOME and, with no GPU visible, TORCH_CUDA_ARCH_LIST, which
    torch.utils.cpp_extension reads. With `announce`, says what it is going to build.
    """
    check_compiler()
    cuda_home, why_not = cuda_build_plan(torch)
    if cuda_home is None:
        wants_cuda = os.environ.get("USE_CUDA") == "1" or (
            os.environ.get("USE_CUDA") != "0" and torch.cuda.is_available()
        )
        if wants_cuda:
            raise SystemExit(
                f"{NAME}: error: cannot build the CUDA kernels: {why_not} "
                "(USE_CUDA=0 builds for the CPU only)"
            )
        if announce:
            say_build(f"building for the CPU only; CUDA skipped: {why_not}")
        return None, ""
    os.environ["CUDA_HOME"] = str(cuda_home)
    if "torch.utils.cpp_extension" in sys.modules:  # it read CUDA_HOME once, at import
        sys.modules["torch.utils.cpp_extension"].CUDA_HOME = str(cuda_home)
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        check_arch_list(cuda_home, os.environ["TORCH_CUDA_ARCH_LIST"])
    elif not torch.cuda.is_available():
        os.environ["TORCH_CUDA_ARCH_LIST"] = default_arch_list(cuda_home)
    arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST") or "visible GPUs: " + ";".join(
        "{}.{}".format(*torch.cuda.get_device_capability(i))
        for i in range(torch.cuda.device_count())
    )
    if announce:
        say_build(f"building CUDA kernels with {cuda_home} for {arch_list}")
    return cuda_home, arch_list


# --- libstdc++: one C++ runtime in the process, torch's ------------------------------------
#
# A compiler can link libstdc++ statically into a shared library without saying so: a g++
# wrapper that puts first, with -B, a directory holding only libstdc++.a (or one that adds
# -static-libstdc++). The library then carries a private copy of the C++ runtime beside
# the one torch loaded, and crashes (a segfault) the first time an error message formats a
# number. Naming torch's libstdc++.so.6 on the link line makes every such compiler link it
# dynamically: the linker resolves the std:: symbols from it before it reaches the archive.
# Whether that worked is decided on the built library itself, by reading its dynamic section.

SHARED_LIBSTDCXX = "libstdc++.so.6"


def loaded_library(name: str) -> Path | None:
    """The file of the shared library `name` (or `name`.x.y) this process has loaded, or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and Path(fields[5].strip()).name.startswith(name):
                    return Path(fields[5].strip())
    except OSError:  # not Linux: there is nothing to add or to check
        pass
    return None


def link_flags(openmp: bool = True) -> list[str]:
    """Extra linker inputs for the extension: torch's libstdc++.so.6, where torch loaded one,
    and torch's OpenMP runtime where the C++ is compiled with OpenMP (see cxx_flags)."""
    library = loaded_library(SHARED_LIBSTDCXX)
    openmp = loaded_library(GNU_OPENMP) if openmp and openmp_flags() else None
    return [str(path) for path in (library, openmp) if path]


# --- OpenMP: the CPU loops on every core ---------------------------------------------------
#
# at::parallel_for splits a loop over torch's threads only in code compiled with OpenMP:
# torch's header runs it on one thread otherwise, and every CPU kernel of the package would
# use one core. -fopenmp compiles the split in; the runtime it calls is the one torch loaded
# (GNU's libgomp, under whatever name torch's wheel gives it), named on the link line as
# libstdc++ is, so that the process has one thread pool. Where torch runs no libgomp (a build
# with another threading), or the compiler is clang (whose OpenMP calls another runtime), the
# loops stay on one thread rather than risk a second runtime.

GNU_OPENMP = "libgomp"


@functools.cache  # the compiler runs once per build, not for each flag list that needs this
def openmp_flags() -> list[str]:
    """["-fopenmp"] where torch loaded libgomp and the C++ compiler is GCC; else []."""
    if loaded_library(GNU_OPENMP) is None:
        return []
    compiler = os.environ.get("CXX", "").strip() or sysconfig.get_config_var("CXX") or "c++"
    try:
        version = subprocess.run(
            [*shlex.split(compiler), "--version"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, ValueError, subprocess.SubprocessError):
        return []
    return ["-fopenmp"] if "clang" not in version.lower() else []


# --- The stable ABI (opgen new --abi stable) ---------------------------------------------
#
# A library built on torch's stable ABI includes only torch/csrc/stable and torch/headeronly
# (with TORCH_TARGET_VERSION set, torch's other headers refuse to compile) and calls torch
# through its C shims alone, so it loads under every torch from the target version on. Its
# CPU loops run on torch's threads through the shims' parallel_for: it is compiled without
# OpenMP, whose runtime in a torch wheel has a file name of that wheel's own (libgomp-<hash>),
# which would tie the library to one torch.

# The oldest torch a stable build loads under: 2.10, the first with the stable library API
# (STABLE_TORCH_LIBRARY, torch::stable::Tensor's typed data pointers, parallel_for).
STABLE_TARGET = (2, 10)


def stable_abi_flags(with_cuda: bool) -> list[str]:
    """The defines of a stable build, for the C++ compiler and nvcc alike."""
    major, minor = STABLE_TARGET
    # One byte each for major, minor and patch, then the ABI tag (torch/headeronly/version.h).
    flags = [f"-DTORCH_TARGET_VERSION=0x{major:02x}{minor:02x}000000000000"]
    # The C shim declares its CUDA functions (the current stream) only under USE_CUDA.
    return flags + (["-DUSE_CUDA"] if with_cuda else [])


def debug_build() -> bool:
    """Whether DEBUG_VARIABLE asks for a debug build (any value but "" and "0")."""
    return os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def say_build(message: str) -> None:
    """Say what is being built; a debug build says so first, naming the variable that asks."""
    say((f"debug build ({DEBUG_VARIABLE}=1): " if debug_build() else "") + message)


def cxx_flags(openmp: bool = True) -> list[str]:
    """The flags the C++ files compile with (release or debug), and OpenMP where it is torch's
    (not for the stable ABI: see stable_abi_flags)."""
    return (DEBUG_CXX_FLAGS if debug_build() else CXX_FLAGS) + (openmp_flags() if openmp else [])


def nvcc_flags(exact: bool) -> list[str]:
    """The flags the CUDA files compile with (release or debug; `exact`: see EXACT_NVCC_FLAGS)."""
    return (DEBUG_NVCC_FLAGS if debug_build() else NVCC_FLAGS) + (EXACT_NVCC_FLAGS if exact else [])


def needed_libraries(library: Path) -> list[str]:
    """The DT_NEEDED entries of an ELF shared library: the libraries it loads with it.

    Raises ValueError for a file that is not a well-formed ELF file (OSError if unreadable).
    """
    data = Path(library).read_bytes()
    if data[:4] != b"\x7fELF":
        raise ValueError(f"{library} is not an ELF file")
    try:
        return _needed_entries(data)
    except (struct.error, IndexError):
        raise ValueError(f"{library} is a truncated or malformed ELF file") from None


def _needed_entries(data: bytes) -> list[str]:
    wide = data[4] == 2  # ELFCLASS64, else 32-bit
    order = "<" if data[5] == 1 else ">"  # little- or big-endian
    # The section header table: where it is, each entry's size, how many entries.
    shoff = struct.unpack_from(order + ("Q" if wide else "I"), data, 0x28 if wide else 0x20)[0]
    shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A if wide else 0x2E)
    # Each section's type, file offset, size and linked section (.dynamic links .dynstr).
    section = order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII")
    sections = [struct.unpack_from(section, data, shoff + i * shentsize) for i in range(shnum)]
    SHT_DYNAMIC, DT_NEEDED = 6, 1
    needed = []
    for _, sh_type, _, _, offset, size, link, *_ in sections:
        if sh_type != SHT_DYNAMIC:
            continue
        strings_offset = sections[link][4]
        entry = order + ("qQ" if wide else "iI")
        for tag, value in struct.iter_unpack(entry, data[offset : offset + size]):
            if tag == DT_NEEDED:
                end = data.index(b"\0", strings_offset + value)
                needed.append(data[strings_offset + value : end].decode())
    return needed


def static_libstdcxx_problem(library: Path, linker: str) -> str | None:
    """Why `library` cannot be loaded next to torch, or None: it must need libstdc++.so.6."""
    if not sys.platform.startswith("linux") or SHARED_LIBSTDCXX in needed_libraries(library):
        return None
    return (
        f"{linker} linked a private copy of libstdc++ into {Path(library).name} (it does not need "
        f"{SHARED_LIBSTDCXX}), which crashes when an error message formats a number; build with "
        "a compiler that links libstdc++ dynamically, e.g. CXX=/usr/bin/g++"
    )
