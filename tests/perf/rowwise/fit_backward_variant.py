"""Softmax's backward (two row inputs, no column inputs) on row_kernel_fit: an experiment, not
the product. reference_ops/softmax copied into tests/perf/rowwise/build/fitbwd/softmax, its
csrc/row_kernels.cuh compiling the fit kernel for specs of two row inputs and no column inputs
at 128 x 4, 256 x 2, 256 x 4, 512 x 2 and 512 x 4, run where RK_FIT_BWD is set in the
environment (one build, both kernels; unset, it is the library's own plan and kernel); with
plan_variants.py's RK_PLAN override (RK_PLAN=512,4 plans bf16 rows of 16384 on 512 x 4, where
the planner picks 1024 x 2 through the ring); and RK_RING_ALL_SMS, where set, giving the ring's
persistent grid a block on every multiprocessor (4096 rows on an H200's 132: 132 blocks of 31
or 32 rows) rather than balanced rows (128 blocks of 32 rows, 4 multiprocessors idle).

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


def main() -> None:
    shutil.rmtree(DST, ignore_errors=True)
    shutil.copytree(ROOT / "reference_ops" / "softmax", DST,
                    ignore=shutil.ignore_patterns("build", "*.so", "__pycache__"))
    lib = DST / "csrc" / "row_kernels.cuh"
    sys.path.insert(0, str(HERE))
    from plan_variants import with_plan_override

    text = with_plan_override(lib.read_text())
    assert text.count(GATE) == 1 and text.count(LAYOUTS) == 1 and text.count(RING_UNITS) == 1
    text = text.replace(RING_UNITS, ALL_SMS)
    text = text.replace(GATE, GATE.replace("F::kColIn == 0 &&", "F::kColIn == 0 && F::kRowIn != 2 &&"))
    text = text.replace(LAYOUTS, TWO_ROW_INPUTS).replace("#include <map>", "#include <map>\n#include <cstdlib>")
    lib.write_text(text)
    print("rendered into", DST)


if __name__ == "__main__":
    main()
