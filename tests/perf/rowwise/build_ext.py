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


def stage_library(library=None, build_dir=BUILD):
    """Copies row_kernels.cuh (the template's, or `library`) into build_dir, on the sources' include path."""
    os.makedirs(build_dir, exist_ok=True)
    shutil.copyfile(library or LIBRARY, os.path.join(build_dir, "row_kernels.cuh"))
SOURCES = [os.path.join(HERE, f) for f in ("rowwise_norm.cu", "rowwise_softmax.cu")]


def build(verbose=False, ns="rowk_bench", library=None, build_dir=BUILD, defines=()):
    """Builds the ops into torch.ops.<ns> as build_dir/<ns>.so. Another ns and build_dir (and
    `library`, another row_kernels.cuh, e.g. the last commit's) build a variant that loads
    beside the default one (bench_rowwise.py --variant NAME=build_dir/ns.so)."""
    import torch.utils.cpp_extension as ce
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0a")
    stage_library(library, build_dir)
    flags = ["-O3", "-std=c++20", "-lineinfo", f"-DROWK_NS={ns}", *(f"-D{d}" for d in defines)]
    if ns != "rowk_bench":
        # the library's C++ namespace renamed too: two builds in one process must not share
        # template instances (the plan caches are process-wide unique symbols)
        flags.append(f"-Drowk={ns}_k")
    return ce.load(
        name=ns,
        sources=SOURCES,
        extra_cuda_cflags=flags + (["-Xptxas=-v"] if verbose else []),
        extra_include_paths=[HERE, build_dir],
        build_directory=build_dir,
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


def load_variants(specs):
    """Loads each NAME=path/to/NS.so (--variant of the perf scripts) beside the default
    build; returns [(NAME, NS)], NS being the build's torch.ops namespace."""
    import torch
    variants = []
    for spec in specs:
        name, so = spec.split("=", 1)
        torch.ops.load_library(so)
        variants.append((name, os.path.basename(so)[: -len(".so")]))
    return variants


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("-v", action="store_true", help="verbose, with ptxas register reports")
    ap.add_argument("--ns", default="rowk_bench", help="op namespace and library name")
    ap.add_argument("--library", default=None, help="another row_kernels.cuh to build")
    ap.add_argument("--build-dir", default=BUILD)
    ap.add_argument("--define", action="append", default=[],
                    help="NAME[=VALUE] for the sources (row_ops.cuh)")
    a = ap.parse_args()
    build(verbose=a.v, ns=a.ns, library=a.library, build_dir=os.path.abspath(a.build_dir),
          defines=a.define)
    print("built", os.path.join(os.path.abspath(a.build_dir), a.ns + ".so"))
