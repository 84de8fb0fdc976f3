"""What is left between row_kernel_fit and rows_per_thread_probe.cu's plain kernels, and can
float softmax rows of 16384 (1024 threads x 4 vectors, the prefetch ring) run the fit kernel?

    python tests/perf/rowwise/fit_variants.py build   # copies of the reference ops, changed, built
    python tests/perf/rowwise/fit_variants.py time    # each copy's forward, in turn, two rounds

The patches apply to the reference ops as of commit 99f4efb (fit_variants_h200.txt); ring1024b2,
without constn, is how row_kernels.cuh runs float softmax rows of 16384 since.

Copies (in /tmp/rkfit/<op>_<variant>; the changes exist only for this measurement):
  base       as generated
  constn     the fit kernel's row length a compile-time constant (BLOCK * VPT * VEC, a power
             of two, so the means' IEEE division v / n becomes an exact multiplication)
  ring1024b1 specs without column inputs (softmax) also run the fit kernel at 1024 x 4 (float
             rows of 16384), a covering grid instead of the ring, compiled for one block a
             multiprocessor
  ring1024b2 the same compiled for two blocks a multiprocessor (at most 32 registers)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import code_variants  # noqa: E402  (its builds of changed copies, its forward timer and shapes)

WORK = Path("/tmp/rkfit")
VARIANTS = {
    "layer_norm": ["base", "constn"],
    "rms_norm": ["base", "constn"],
    "softmax": ["base", "constn", "ring1024b1", "ring1024b2"],
}


def replace_once(s: str, old: str, new: str) -> str:
    assert s.count(old) == 1, old
    return s.replace(old, new)


def patch(name: str, rk: Path) -> None:
    s = rk.read_text()
    fit_n = "    // Vector i of this thread: columns (i * BLOCK + t) * VEC .. + VEC - 1 of the row."
    if name != "base":
        head, tail = s.split(fit_n)
        tail = replace_once(tail[:800], "rc.n = (A)p.N;", "rc.n = A(BLOCK * VPT * VEC);") + tail[800:]
        s = head + fit_n + tail
    if name.startswith("ring1024"):
        blocks = "2" if name.endswith("b2") else "1"
        s = replace_once(s, "__launch_bounds__(BLOCK, 1024 / BLOCK) row_kernel_fit",
                         f"__launch_bounds__(BLOCK, BLOCK == 1024 ? {blocks} : 1024 / BLOCK) row_kernel_fit")
        s = replace_once(s, "  if constexpr (F::kColGrad > 0 || F::kColIn == 0) {",
                         "  if constexpr (F::kColGrad > 0) {")
        s = replace_once(s, "    RK_FIT(512, 4);\n",
                         "    if constexpr (F::kColIn == 0) { RK_FIT(1024, 4); return nullptr; }\n"
                         "    RK_FIT(512, 4);\n")
        ring = "    if (pl.strategy == Strategy::Block && pl.block == 1024 && per_sm == 1 && cc_major >= 8 &&"
        s = replace_once(s, ring, ring.replace("if (", "if (F::kColIn > 0 && "))
    rk.write_text(s)


def patch_copy(op: str, name: str, csrc: Path) -> None:
    patch(name, csrc / "row_kernels.cuh")


if __name__ == "__main__":
    code_variants.main(patch_copy, VARIANTS, WORK)
