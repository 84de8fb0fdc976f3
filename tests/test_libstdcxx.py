"""Builds with a compiler that links libstdc++ statically, as the GPU machine's CXX does.

There, CXX=/opt/gcc/bin/g++ is a wrapper that puts first, with -B, a directory holding only
libstdc++.a. Extensions it linked carried a private copy of libstdc++ and segfaulted the
first time an input check formatted a shape. `static_gxx` (conftest.py) is the same wrapper
made of this machine's g++. A generated build must come out needing libstdc++.so.6 anyway,
or refuse in one line; never install a library that crashes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from opgen import project_toolchain

from .conftest import LIGHT_OP, pip_install, render, run_project_tests

SHARED = "libstdc++.so.6"


def needed(library: Path) -> list[str]:
    return project_toolchain.load().needed_libraries(library)


def built_library(project: Path, name: str) -> Path:
    (library,) = (project / name).glob("_C*.so")
    return library


def test_the_wrapper_links_libstdcxx_statically(static_gxx, tmp_path):
    # The premise of this file: what the wrapper links does not need the shared libstdc++.
    source = tmp_path / "probe.cpp"
    source.write_text('#include <stdexcept>\nvoid f() { throw std::runtime_error("x"); }\n')
    subprocess.run([str(static_gxx), "-shared", "-fPIC", str(source), "-o", str(tmp_path / "p.so")],
                   check=True)
    assert SHARED not in needed(tmp_path / "p.so")


def test_a_project_built_with_the_wrapper_needs_the_shared_libstdcxx(python, projects, static_gxx):
    project = render(projects, "static_cxx", *LIGHT_OP)
    pip_install(python, project, CXX=str(static_gxx), TORCH_CUDA_ARCH_LIST="9.0")
    assert SHARED in needed(built_library(project, "static_cxx"))
    # The checks that format shapes and dtypes into their messages (what crashed) pass.
    result = run_project_tests(python, project, "-k", "rejects or naming or error")
    assert result.returncode == 0, result.stdout[-3000:]
    assert " passed" in result.stdout


def test_setup_py_refuses_a_library_that_still_links_libstdcxx_statically(python, projects, tmp_path,
                                                                        static_gxx):
    # A compiler that drops the shared libstdc++ from the link line: the check on the built
    # library, not the flags, is what stops it.
    stubborn = tmp_path / "g++"
    stubborn.write_text("#!/bin/sh\nfor arg do\n  shift\n  case \"$arg\" in\n"
                        "    */libstdc++.so*) ;;\n    *) set -- \"$@\" \"$arg\" ;;\n  esac\ndone\n"
                        f'exec {static_gxx} "$@"\n')
    stubborn.chmod(0o755)
    project = render(projects, "stubborn_cxx", *LIGHT_OP)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
         "--no-build-isolation", "-e", str(project)],
        capture_output=True, text=True, env={**os.environ, "CXX": str(stubborn), "USE_CUDA": "0"},
    )
    assert result.returncode != 0
    output = result.stdout + result.stderr
    line = next(line for line in output.splitlines() if "stubborn_cxx: error:" in line)
    assert line.strip().startswith(f"stubborn_cxx: error: {stubborn} linked a private copy of libstdc++ "
                                   "into _C.abi3.so (it does not need libstdc++.so.6)")
    assert "build with a compiler that links libstdc++ dynamically, e.g. CXX=/usr/bin/g++" in line
    assert not list((project / "stubborn_cxx").glob("_C*.so"))  # nothing left to import


def test_a_jit_build_with_the_wrapper_needs_the_shared_libstdcxx(tmp_path, static_gxx):
    project = render(tmp_path, "jit_cxx", *LIGHT_OP)
    cache = tmp_path / "cache"
    result = subprocess.run(
        [sys.executable, "-c", "import jit_cxx, torch; print(jit_cxx.jit_cxx(torch.ones(2)).tolist())"],
        cwd=project, capture_output=True, text=True,
        env={**os.environ, "JIT_CXX_JIT": "1", "JIT_CXX_JIT_CACHE": str(cache), "USE_CUDA": "0",
             "CXX": str(static_gxx), "PYTHONPATH": str(project)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (library,) = cache.glob("*/jit_cxx_jit.so")
    assert SHARED in needed(library)
