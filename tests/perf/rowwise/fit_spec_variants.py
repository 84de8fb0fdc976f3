"""What in the spec's code keeps row_kernel_fit's LayerNorm bf16 forward at 0.90-0.91 of a
copy's bandwidth, where rows_per_thread_probe.cu's plain kernel, at the same layout, registers
and occupancy, reaches 0.93-0.95? (NOTES.md, "LayerNorm bf16's fit kernel against the probe's,
in SASS": 696 instructions against 448.)

    python tests/perf/rowwise/fit_spec_variants.py build   # copies of the reference ops, changed, built
    python tests/perf/rowwise/fit_spec_variants.py time    # each copy's forward, in turn, two rounds

Copies (in /tmp/rkspec/<op>_<variant>; the changes exist only for this measurement, and are
right only for the timed calls: rows that fill their block, no statistics to save):
  base     as generated (the patches apply to the reference ops as of commit 5ca33a2)
  rcp      the means' v / n (an IEEE division, its slow path a call) as v * __frcp_rn(n)
  nostat   the fit kernel without the per-row statistics' stores (the forward's timed calls
           pass null pointers for them: the code is there, the stores are not made)
  noloop   the fit kernel's row loop dropped: one row a block (fit plans are covering grids)
  all      the three together
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import code_variants  # noqa: E402  (its builds of changed copies, its forward timer and shapes)

WORK = Path("/tmp/rkspec")
VARIANTS = {
    "layer_norm": ["base", "rcp", "nostat", "noloop", "all"],
    "rms_norm": ["base", "rcp", "nostat", "noloop", "all"],
}
FIT_KERNEL = "    row_kernel_fit(const RowParams<F, T> p) {\n"
ROW_LOOP = "  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {\n"
STAT_STORES = """    if (t == 0) {
#pragma unroll
      for (int k = 0; k < F::kStatOut; ++k)
        if (p.stat_out[k]) p.stat_out[k][row] = F::stat(k, rc);
    }
"""
MEANS = "return v / e.n;"  # the first: the forward spec's fin()
RCP = """template <class A>
__device__ inline A timing_rcp(A n) {
  return A(1) / n;
}
template <>
__device__ inline float timing_rcp<float>(float n) {
  return __frcp_rn(n);
}

"""

def replace_once(s: str, old: str, new: str) -> str:
    assert s.count(old) == 1, old
    return s.replace(old, new)


def patch_copy(op: str, name: str, csrc: Path) -> None:
    rk, kernel = csrc / "row_kernels.cuh", csrc / f"{op}_kernel.cu"
    head, fit = rk.read_text().split(FIT_KERNEL)
    end = fit.index("\n}\n") + 3  # the fit kernel's body, to the closing brace of its function
    body, tail = fit[:end], fit[end:]
    if name in ("nostat", "all"):
        body = replace_once(body, STAT_STORES, "")
    if name in ("noloop", "all"):
        body = replace_once(body, ROW_LOOP, "  {\n    const int64_t row = blockIdx.x;\n")
    rk.write_text(head + FIT_KERNEL + body + tail)
    if name in ("rcp", "all"):
        k = kernel.read_text()
        first = k.index(MEANS)
        k = k[:first] + "return v * timing_rcp(e.n);" + k[first + len(MEANS):]
        kernel.write_text(replace_once(k, f"namespace {op} {{\n", RCP + f"namespace {op} {{\n"))


if __name__ == "__main__":
    code_variants.main(patch_copy, VARIANTS, WORK)
