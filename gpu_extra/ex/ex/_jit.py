"""Build csrc/ when the package is imported, instead of with pip: for iterating on kernels.

    EX_JIT=1 python my_script.py
    EX_JIT=verbose python my_script.py

With either, `import ex` compiles csrc/ first (verbose: showing the compiler's commands); with
EX_DEBUG=1 as well, a debug build (-G -g -O0: see _toolchain.py).

torch.utils.cpp_extension.load builds csrc/ into a directory keyed by torch's version, its
CUDA version, the CUDA archs, the compile flags and where csrc/ is: a torch upgrade gets a
new directory, so it never loads a stale binary, and within one directory ninja rebuilds
only the files an edit touched. A debug build has flags of its own, so a directory of its own:
switching between the two rebuilds nothing. One process builds at a time, and a lock that a
killed build left behind does not block the next one.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path

import torch

from . import _toolchain

ENVIRONMENT_VARIABLE = "EX_JIT"
CSRC = Path(__file__).resolve().parent.parent / "csrc"
# CPU and CUDA results must agree bit for bit (opgen new --exact): see _toolchain.py.
EXACT = True


def enabled() -> bool:
    return os.environ.get(ENVIRONMENT_VARIABLE, "") not in ("", "0")


def cache_root() -> Path:
    """EX_JIT_CACHE, else ~/.cache/ex-jit (XDG_CACHE_HOME respected)."""
    if os.environ.get("EX_JIT_CACHE"):
        return Path(os.environ["EX_JIT_CACHE"])
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "ex-jit"


def load() -> bool:
    """Build (if needed) and load csrc/, registering torch.ops.ex.

    Returns whether the build has CUDA kernels.
    """
    if not (CSRC / "library.cpp").is_file():
        raise ImportError(
            f"{ENVIRONMENT_VARIABLE} builds csrc/ from the project's source tree, "
            f"and there is none at {CSRC}; unset it or use the project checkout"
        )
    cuda_home, arch_list = _toolchain.prepare_cuda(torch, announce=False)
    from torch.utils import cpp_extension  # after prepare_cuda has set CUDA_HOME

    with_cuda = cuda_home is not None
    cxx_flags, nvcc_flags = _toolchain.cxx_flags(), _toolchain.nvcc_flags(EXACT)
    settings = [torch.__version__, str(torch.version.cuda), arch_list, str(with_cuda)]
    settings += [repr(cxx_flags), repr(nvcc_flags), str(CSRC)]
    key = hashlib.sha256("\n".join(settings).encode()).hexdigest()[:16]
    build_directory = cache_root() / key
    build_directory.mkdir(parents=True, exist_ok=True)
    library = build_directory / "ex_jit.so"
    defines = ["-DWITH_CUDA"] if with_cuda else []
    sources = sorted(CSRC.glob("*.cpp")) + (sorted(CSRC.glob("*.cu")) if with_cuda else [])
    with open(build_directory / "build.lock", "w") as lock:
        # The OS releases this lock when its process dies, killed or not.
        fcntl.flock(lock, fcntl.LOCK_EX)
        # torch's own lock file: whoever left it is gone, since this process holds ours.
        (build_directory / "lock").unlink(missing_ok=True)
        if is_stale(library):  # ninja decides what to compile; this only decides what to say
            _toolchain.prepare_cuda(torch, announce=True)
        cpp_extension.load(
            name="ex_jit",
            sources=[str(source) for source in sources],
            extra_cflags=cxx_flags + defines,
            extra_cuda_cflags=nvcc_flags + defines,
            extra_ldflags=_toolchain.link_flags(),
            extra_include_paths=[str(CSRC)],
            build_directory=str(build_directory),
            with_cuda=with_cuda,
            is_python_module=False,  # load the library, which registers the ops
            verbose=os.environ.get(ENVIRONMENT_VARIABLE) == "verbose",
        )
        problem = _toolchain.static_libstdcxx_problem(library, os.environ.get("CXX", "c++"))
        if problem:
            library.unlink()  # never loaded again: the next import builds it anew
            raise ImportError(f"ex: {problem}")
    return with_cuda


def is_stale(library: Path) -> bool:
    """Whether the library is missing or older than a file in csrc/."""
    if not library.is_file():
        return True
    built = library.stat().st_mtime
    return any(source.stat().st_mtime > built for source in CSRC.iterdir())
