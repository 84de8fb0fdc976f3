"""Build matmul: CUDA kernels with nvcc when a CUDA toolkit is found, else CPU only.

    pip install --no-build-isolation -e .    # build in place against the installed torch
    USE_CUDA=0 pip install ...               # CPU only, even where CUDA is found
    USE_CUDA=1 pip install ...               # stop with an error if CUDA cannot be built
    python setup.py build_ext --inplace      # rebuild only what changed (ninja)

At build time this records torch's version, its CUDA version and the CUDA archs in
matmul/_build_info.py; `import matmul` refuses a build that does not match.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup

NAME = "matmul"
ROOT = Path(__file__).resolve().parent
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


def write_build_info(torch, with_cuda: bool, arch_list: str) -> None:
    (ROOT / NAME / "_build_info.py").write_text(
        "# Written by setup.py when the extension was built; read by _build_check.py.\n"
        f"TORCH_VERSION = {torch.__version__!r}\n"
        f"TORCH_CUDA_VERSION = {torch.version.cuda!r}\n"
        f"WITH_CUDA = {with_cuda!r}\n"
        f"CUDA_ARCH_LIST = {arch_list!r}\n"
    )


def extensions():
    import torch

    cuda_home, why_not = cuda_build_plan(torch)
    if cuda_home is None:
        wants_cuda = os.environ.get("USE_CUDA") == "1" or (
            os.environ.get("USE_CUDA") != "0" and torch.cuda.is_available()
        )
        if wants_cuda:
            raise SystemExit(f"{NAME}: error: cannot build the CUDA kernels: {why_not} "
                             "(USE_CUDA=0 builds for the CPU only)")
        say(f"building for the CPU only; CUDA skipped: {why_not}")
    else:
        # Set before cpp_extension is imported: it reads CUDA_HOME once, at import.
        os.environ["CUDA_HOME"] = str(cuda_home)
        if not os.environ.get("TORCH_CUDA_ARCH_LIST") and not torch.cuda.is_available():
            os.environ["TORCH_CUDA_ARCH_LIST"] = default_arch_list(cuda_home)
        arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST") or "visible GPUs: " + ";".join(
            "{}.{}".format(*torch.cuda.get_device_capability(i))
            for i in range(torch.cuda.device_count())
        )
        say(f"building CUDA kernels with {cuda_home} for {arch_list}")

    from torch.utils.cpp_extension import CppExtension, CUDAExtension

    write_build_info(torch, cuda_home is not None, arch_list if cuda_home else "")
    # -g0: Python's own CFLAGS carry -g, which makes the C++ compile a third slower.
    cxx_flags = ["-O3", "-g0"]
    if cuda_home is None:
        return [CppExtension(f"{NAME}._C", [f"csrc/{NAME}.cpp"],
                             extra_compile_args={"cxx": cxx_flags}, py_limited_api=True)]
    return [
        CUDAExtension(
            f"{NAME}._C",
            [f"csrc/{NAME}.cpp", f"csrc/{NAME}_kernel.cu"],
            define_macros=[("WITH_CUDA", None)],
            # -lineinfo maps kernel code to source lines in compute-sanitizer and profilers;
            # --threads 0 compiles the archs in parallel.
            extra_compile_args={
                "cxx": cxx_flags,
                "nvcc": ["-O3", "-lineinfo", "--threads", "0"],
            },
            py_limited_api=True,
        )
    ]


def build_ext_command():
    from torch.utils.cpp_extension import BuildExtension

    return BuildExtension


# pip first asks for metadata (egg_info, dist_info), which needs neither torch nor the
# extension list: skipping them there saves seconds on every install.
METADATA_COMMANDS = {"egg_info", "dist_info", "sdist"}
command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
building = command not in METADATA_COMMANDS

setup(
    ext_modules=extensions() if building else [],
    cmdclass={"build_ext": build_ext_command()} if building else {},
    # Python's limited API (torch defines Py_LIMITED_API): one wheel for every Python 3.9+.
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
