"""Build ex: CUDA kernels with nvcc when a CUDA toolkit is found, else CPU only.

    pip install --no-build-isolation -e .    # build in place against the installed torch
    USE_CUDA=0 pip install ...               # CPU only, even where CUDA is found
    USE_CUDA=1 pip install ...               # stop with an error if CUDA cannot be built
    python setup.py build_ext --inplace      # rebuild only what changed (ninja)

With EX_DEBUG=1 set, either install makes a debug build (-G -g -O0, see _toolchain.py). At build
time this records torch's version, its CUDA version and the CUDA archs in ex/_build_info.py; `import
ex` refuses a build that does not match.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys
from pathlib import Path

from setuptools import setup

NAME = "ex"
# CPU and CUDA results must agree bit for bit (opgen new --exact): see _toolchain.py.
EXACT = True
ROOT = Path(__file__).resolve().parent
# Every source in csrc/: the library's schemas, each op's glue and autograd (C++), and its
# CUDA kernels (.cu), which build only where nvcc is found.
CPP_SOURCES = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "csrc").glob("*.cpp"))
CUDA_SOURCES = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "csrc").glob("*.cu"))


def load_toolchain():
    """ex/_toolchain.py, loaded by path: the package cannot be imported unbuilt."""
    spec = importlib.util.spec_from_file_location("_toolchain", ROOT / NAME / "_toolchain.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_build_info(
    torch, with_cuda: bool, arch_list: str, debug: bool, stable_target: tuple | None = None
) -> None:
    def literal(value) -> str:  # strings in double quotes, as `ruff format` leaves them
        return json.dumps(str(value)) if isinstance(value, str) else repr(value)

    lines = [
        "# Written by setup.py when the extension was built; read by _build_check.py.",
        f"TORCH_VERSION = {literal(torch.__version__)}",
        f"TORCH_CUDA_VERSION = {literal(torch.version.cuda)}",
        f"WITH_CUDA = {literal(with_cuda)}",
        f"CUDA_ARCH_LIST = {literal(arch_list)}",
        f"DEBUG = {literal(debug)}",
    ]
    if stable_target:
        lines.append(f"STABLE_TARGET = {literal(stable_target)}")
    (ROOT / NAME / "_build_info.py").write_text("\n".join(lines) + "\n")


def extensions():
    try:
        import torch
    except ImportError:
        raise SystemExit(
            f"{NAME}: error: torch is not installed in {sys.executable}; install it first "
            "(pip install torch ninja), then pip install --no-build-isolation -e ."
        ) from None

    toolchain = load_toolchain()
    cuda_home, arch_list = toolchain.prepare_cuda(torch)
    from torch.utils.cpp_extension import CppExtension, CUDAExtension

    with_cuda = cuda_home is not None
    write_build_info(torch, with_cuda, arch_list, toolchain.debug_build())
    cxx_flags, link_flags = toolchain.cxx_flags(), toolchain.link_flags()
    if not with_cuda:
        return [
            CppExtension(
                f"{NAME}._C",
                CPP_SOURCES,
                extra_compile_args={"cxx": cxx_flags},
                extra_link_args=link_flags,
                py_limited_api=True,
            )
        ]
    extension = CUDAExtension(
        f"{NAME}._C",
        [*CPP_SOURCES, *CUDA_SOURCES],
        define_macros=[("WITH_CUDA", None)],
        extra_compile_args={"cxx": cxx_flags, "nvcc": toolchain.nvcc_flags(EXACT)},
        extra_link_args=link_flags,
        py_limited_api=True,
    )
    return [extension]


def build_ext_command():
    from torch.utils.cpp_extension import BuildExtension

    toolchain = load_toolchain()

    class BuildAndCheckExtension(BuildExtension):
        """torch's build_ext, then a look at what the linker made (see _toolchain.py)."""

        def finalize_options(self):
            super().finalize_options()
            # Objects and ninja's records stay in the project, not in the temporary directory
            # of `pip install -e .`: a second install compiles only the files that changed.
            # A debug build keeps its own, so that switching back and forth rebuilds nothing.
            temp = "temp-debug" if toolchain.debug_build() else "temp"
            self.build_temp = str(ROOT / "build" / temp)

        def build_extension(self, ext):
            super().build_extension(ext)
            library = Path(self.get_ext_fullpath(ext.name))
            # setuptools links C++ with the C++ compiler ($CXX, else Python's own).
            linker = (self.compiler.compiler_cxx or self.compiler.linker_so)[0]
            problem = toolchain.static_libstdcxx_problem(library, linker)
            if problem:
                library.unlink()  # never installed: it would crash at the first error message
                raise SystemExit(f"{NAME}: error: {problem}")

    return BuildAndCheckExtension


def check_wheel_support() -> None:
    """Stop in one line where setuptools cannot build wheels (pip would say: invalid command)."""
    find = importlib.util.find_spec
    if find("setuptools.command.bdist_wheel") or find("wheel"):
        return
    import setuptools

    raise SystemExit(
        f"{NAME}: error: setuptools {setuptools.__version__} in {sys.executable} cannot build "
        "wheels; pip install 'setuptools>=70.1', then pip install --no-build-isolation -e . again"
    )


check_wheel_support()

# pip first asks for metadata (egg_info, dist_info), which needs neither torch nor the
# extension list: skipping them there saves seconds on every install.
METADATA_COMMANDS = {"egg_info", "dist_info", "sdist"}
command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
building = command not in METADATA_COMMANDS


def torch_requirement() -> str:
    """The torch the library is built against, exactly: a wheel of it loads under that torch
    only, so pip must not install it beside another. Read from the installed package's
    metadata (no import); any torch where none is installed yet (an sdist)."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "torch>=2.4"
    return "torch==" + version.split("+")[0]  # 2.15.0 matches 2.15.0+cu132 too


setup(
    ext_modules=extensions() if building else [],
    cmdclass={"build_ext": build_ext_command()} if building else {},
    install_requires=[torch_requirement()],
    # Python's limited API (torch defines Py_LIMITED_API): one wheel for every Python 3.9+.
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
