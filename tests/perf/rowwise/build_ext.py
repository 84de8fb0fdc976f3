"""Builds (or loads) the benchmark-only torch extension of the row kernels.

`python tests/perf/rowwise/build_ext.py` builds it here (no GPU needed) into
tests/perf/rowwise/build/; bench_rowwise.py loads that library and rebuilds only when
loading fails (another torch, another machine).
"""
import glob
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "build")
# The library itself is the template's copy, as generated projects get it (csrc/row_kernels.cuh).
LIBRARY = glob.glob(os.path.join(HERE, "..", "..", "..", "templates", "project", "csrc", "*row_kernels.cuh*"))[0]


def stage_library():
    """Copies the template's row_kernels.cuh into build/, which the sources' include path holds."""
    os.makedirs(BUILD, exist_ok=True)
    shutil.copyfile(LIBRARY, os.path.join(BUILD, "row_kernels.cuh"))
SOURCES = [os.path.join(HERE, f) for f in ("rowwise_norm.cu", "rowwise_softmax.cu")]


def build(verbose=False):
    import torch.utils.cpp_extension as ce
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0a")
    stage_library()
    return ce.load(
        name="rowk_bench",
        sources=SOURCES,
        extra_cuda_cflags=["-O3", "-std=c++17", "-lineinfo", "-Xptxas=-v"] if verbose else ["-O3", "-std=c++17", "-lineinfo"],
        extra_include_paths=[HERE, BUILD],
        build_directory=BUILD,
        is_python_module=False,
        verbose=verbose,
    )


def load():
    import torch
    so = os.path.join(BUILD, "rowk_bench.so")
    if os.path.exists(so):
        try:
            torch.ops.load_library(so)
            torch.ops.rowk_bench.rms_fwd  # noqa: B018  (raises if the ops did not register)
            return "prebuilt"
        except Exception as e:  # another torch or machine: rebuild
            print(f"prebuilt extension did not load ({e!r}); rebuilding", file=sys.stderr)
    build()
    torch.ops.load_library(so)
    return "built"


if __name__ == "__main__":
    build(verbose="-v" in sys.argv)
    print("built", os.path.join(BUILD, "rowk_bench.so"))
