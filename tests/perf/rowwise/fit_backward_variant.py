"""Softmax's backward (two row inputs, no column inputs) on row_kernel_fit: an experiment, not
the product. reference_ops/softmax copied into tests/perf/rowwise/build/fitbwd/softmax, its
csrc/row_kernels.cuh compiling the fit kernel for specs of two row inputs and no column inputs
at 128 x 4, 256 x 2, 256 x 4, 512 x 2 and 512 x 4, run where RK_FIT_BWD is set in the
environment (one build, both kernels; unset, it is the library's own plan and kernel); with
plan_variants.py's RK_PLAN override (RK_PLAN=512,4 plans bf16 rows of 16384 on 512 x 4, where
the planner picks 1024 x 2 through the ring); and RK_RING_ALL_SMS, where set, giving the ring's
persistent grid a block on every multiprocessor (4096 rows on an H200's 132: 132 blocks of 31
or 32 rows) rather than balanced rows (128 blocks of 32 rows, 4 multiprocessors idle).
The fit kernel's output pass takes its opaque zero from shared memory, after the barrier: the
library's opaque_zero() (`mov.u32 %0, 0` in inline PTX) hides the zero from the CUDA compiler
but not from ptxas, which folds it, keeps the first pass's unpacked floats for the output pass
and so needs 86 registers for two bf16 rows of 32 elements a thread (64 with 44 bytes spilled
under the fit kernel's bound); with the zero read from shared memory, 54 and no spills.

    python tests/perf/rowwise/fit_backward_variant.py        # here; then on the GPU machine:
    RK_FIT_BWD=1 PYTHONPATH=tests/perf/rowwise/build/fitbwd/softmax python \
        tests/perf/rowwise/softmax_backward_parts.py
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DST = HERE / "build" / "fitbwd" / "softmax"

GATE = "if constexpr (F::kColGrad > 0 || (F::kColIn == 0 && !rk_fit_1024<F, T>())) {"
LAYOUTS = """    if constexpr (F::kColIn == 0) {
      RK_FIT(1024, 4);
    } else {"""
RING_UNITS = "      units = balanced(std::min<int64_t>(ngroups, max_units));"
ALL_SMS = """      units = std::getenv("RK_RING_ALL_SMS") ? std::min<int64_t>(ngroups, max_units)
                                             : balanced(std::min<int64_t>(ngroups, max_units));"""
TWO_ROW_INPUTS = """    if constexpr (F::kColIn == 0 && F::kRowIn == 2) {
      if (!std::getenv("RK_FIT_BWD")) return nullptr;  // experiment: fit_backward_variant.py
      RK_FIT(128, 4);
      RK_FIT(256, 2);
      RK_FIT(256, 4);
      RK_FIT(512, 2);
      RK_FIT(512, 4);
    } else if constexpr (F::kColIn == 0) {
      RK_FIT(1024, 4);
    } else {"""


FIT_SIGNATURE = "row_kernel_fit(const RowParams<F, T> p) {"
FIT_SMEM = """  __shared__ A red_smem[2][F::kRed > 0 ? F::kRed : 1][kWarps];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;"""
FIT_ZERO_SMEM = FIT_SMEM + """
  __shared__ uint32_t zero_smem;  // experiment: fit_backward_variant.py
  if (t == 0) zero_smem = 0;"""
FIT_OUT_ZERO = """    O* op = p.out[k] + row * p.out_stride[k];
    const uint32_t z = opaque_zero();"""


def with_zero_from_smem(text: str) -> str:
    """row_kernel_fit whose output pass reads its zero from shared memory after the barrier."""
    start = text.index(FIT_SIGNATURE)
    end = text.index("\n}\n", start)
    kernel = text[start:end]
    assert kernel.count(FIT_SMEM) == 1 and kernel.count(FIT_OUT_ZERO) == 1
    kernel = kernel.replace(FIT_SMEM, FIT_ZERO_SMEM).replace(FIT_OUT_ZERO, FIT_OUT_ZERO.replace(
        "opaque_zero()", "*static_cast<volatile uint32_t*>(&zero_smem)"))
    return text[:start] + kernel + text[end:]


def main() -> None:
    shutil.rmtree(DST, ignore_errors=True)
    shutil.copytree(ROOT / "reference_ops" / "softmax", DST,
                    ignore=shutil.ignore_patterns("build", "*.so", "__pycache__"))
    lib = DST / "csrc" / "row_kernels.cuh"
    sys.path.insert(0, str(HERE))
    from plan_variants import with_plan_override

    text = with_plan_override(lib.read_text())
    assert text.count(GATE) == 1 and text.count(LAYOUTS) == 1 and text.count(RING_UNITS) == 1
    text = with_zero_from_smem(text.replace(RING_UNITS, ALL_SMS))
    text = text.replace(GATE, GATE.replace("F::kColIn == 0 &&", "F::kColIn == 0 && F::kRowIn != 2 &&"))
    text = text.replace(LAYOUTS, TWO_ROW_INPUTS).replace("#include <map>", "#include <map>\n#include <cstdlib>")
    lib.write_text(text)
    print("rendered into", DST)


if __name__ == "__main__":
    main()
