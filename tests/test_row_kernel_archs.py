"""csrc/row_kernels.cuh compiles without a warning for every GPU architecture nvcc builds, and
its kernel for two 2-byte rows of 16384 (softmax's backward) holds them without spilling.

Its kernels for rows that fill a block (row_kernel_fit) ask __launch_bounds__ for a minimum
of blocks a multiprocessor. How many threads a multiprocessor holds differs by architecture
(1024 on sm_75, 1536 on sm_86, sm_89 and sm_120, 2048 on sm_80 and sm_90), and ptxas warns
of a minimum the architecture cannot hold ("Value of threads per SM ... is out of range").
The projects build for the GPU they find, or for the default archs: the kernels are compiled
here, alone, for each arch nvcc lists (a build of a whole rowwise op takes a minute an arch).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import HAS_NVCC

TEMPLATE_CSRC = Path(__file__).resolve().parent.parent / "templates" / "project" / "csrc"
# A softmax-like spec (one row input, no column input: 1024-thread fit kernels for float
# rows) and a LayerNorm-like one (two column inputs: fit kernels of 128 to 512 threads).
SPECS = r"""
#include <cuda_bf16.h>

#include "row_kernels.cuh"

template <int COLS>
struct Spec {
  template <class V>
  struct Scalars {
    V eps;
  };
  static constexpr int kRowIn = 1, kColIn = COLS, kStatIn = 0;
  static constexpr int kRed = 2, kStages = 2;
  static constexpr int kRowOut = 1, kStatOut = 0, kColGrad = 0;
  RK_HD static constexpr rowk::Red red_op(int j) { return j == 0 ? rowk::Red::Max : rowk::Red::Sum; }
  RK_HD static constexpr int red_stage(int j) { return j; }
  template <class E>
  RK_DEV static auto red(int j, const E& e) {
    return j == 0 ? e.x[0] : expf(e.x[0] - e.r[0]);
  }
  template <class E>
  RK_DEV static auto fin(int, typename E::value_type v, const E&) {
    return v;
  }
  template <class E>
  RK_DEV static auto out(int, const E& e) {
    typename E::value_type y = expf(e.x[0] - e.r[0]) / e.r[1];
    for (int c = 0; c < COLS; ++c) y = y * e.c[c];
    return y;
  }
  template <class E>
  RK_DEV static auto stat(int, const E&) {
    return typename E::value_type(0);
  }
  template <class E>
  RK_DEV static auto colgrad(int, const E&) {
    return typename E::value_type(0);
  }
};

// A softmax-backward-like spec: two row inputs (y, grad), no column inputs, one reduction.
struct TwoRows {
  template <class V>
  struct Scalars {};
  static constexpr int kRowIn = 2, kColIn = 0, kStatIn = 0;
  static constexpr int kRed = 1, kStages = 1;
  static constexpr int kRowOut = 1, kStatOut = 0, kColGrad = 0;
  RK_HD static constexpr rowk::Red red_op(int) { return rowk::Red::Sum; }
  RK_HD static constexpr int red_stage(int) { return 0; }
  template <class E>
  RK_DEV static auto red(int, const E& e) {
    return e.x[0] * e.x[1];
  }
  template <class E>
  RK_DEV static auto fin(int, typename E::value_type v, const E&) {
    return v;
  }
  template <class E>
  RK_DEV static auto out(int, const E& e) {
    return e.x[0] * (e.x[1] - e.r[0]);
  }
  template <class E>
  RK_DEV static auto stat(int, const E&) {
    return typename E::value_type(0);
  }
  template <class E>
  RK_DEV static auto colgrad(int, const E&) {
    return typename E::value_type(0);
  }
};

void* two_rows_kernel(const rowk::Plan& plan) { return rowk::rk_fit_kernel<TwoRows, __nv_bfloat16>(plan); }

void* fit_kernel(const rowk::Plan& plan, int spec) {
  if (spec == 0) return rowk::rk_fit_kernel<Spec<0>, float>(plan);
  if (spec == 1) return rowk::rk_fit_kernel<Spec<2>, float>(plan);
  return rowk::rk_fit_kernel<Spec<2>, __nv_bfloat16>(plan);
}
"""


def nvcc() -> str:
    return shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


@pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc, to compile the kernels (no GPU needed)")
def test_the_fit_kernels_compile_without_a_warning_for_every_arch(tmp_path):
    [header] = TEMPLATE_CSRC.glob("*row_kernels.cuh*")
    shutil.copy(header, tmp_path / "row_kernels.cuh")
    (tmp_path / "specs.cu").write_text(SPECS)
    listed = subprocess.run([nvcc(), "--list-gpu-arch"], capture_output=True, text=True, check=True).stdout
    archs = re.findall(r"compute_(\d+)", listed)
    assert "75" in archs and "90" in archs, listed
    gencode = [f"-gencode=arch=compute_{arch},code=sm_{arch}" for arch in archs]
    build = subprocess.run(
        [nvcc(), "-std=c++17", "-O3", "--threads", "2", *gencode, "-c", "specs.cu", "-o", "specs.o"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    warnings = sorted(set(re.findall(r"^.*warning.*$", build.stdout + build.stderr, re.M | re.I)))
    assert not warnings, f"for sm_{', sm_'.join(archs)}:\n" + "\n".join(warnings)


@pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc, to compile the kernels (no GPU needed)")
def test_the_two_row_fit_kernel_holds_two_bf16_rows_of_16384_without_spilling(tmp_path):
    # Two bf16 rows of 32 elements a thread in 512 threads, two blocks a multiprocessor (at most
    # 64 registers). With the output pass's zero as an inline `mov 0`, ptxas kept the first
    # pass's 64 unpacked floats across the barrier: 64 registers and 44 bytes spilled, and
    # softmax's bf16 backward at 4096 x 16384 took 110 us on an H200 instead of 99.5.
    [header] = TEMPLATE_CSRC.glob("*row_kernels.cuh*")
    shutil.copy(header, tmp_path / "row_kernels.cuh")
    (tmp_path / "specs.cu").write_text(SPECS)
    build = subprocess.run(
        [nvcc(), "-std=c++17", "-O3", "-gencode=arch=compute_90,code=sm_90", "-Xptxas", "-v",
         "-c", "specs.cu", "-o", "specs.o"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    # ptxas -v: "Compiling entry function '<name>'", then its stack frame and registers
    report = re.findall(r"Compiling entry function '(\w+)'.*?(\d+) bytes stack frame.*?Used (\d+) registers",
                        build.stderr, re.S)
    fit = [(int(stack), int(regs)) for name, stack, regs in report
           if "row_kernel_fit" in name and "TwoRows" in name and "Li4ELi512E" in name]
    assert fit, build.stderr[-3000:]
    assert fit == [(0, fit[0][1])] and fit[0][1] <= 64, f"(stack bytes, registers): {fit}"
