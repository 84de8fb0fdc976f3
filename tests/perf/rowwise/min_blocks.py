"""Blocks a multiprocessor for the rowwise forwards with column inputs: an experiment, not
the product. At bf16 4096 x 16384 the planner's 512 x 4 layout gives LayerNorm's forward
64 registers (two blocks a multiprocessor, two rows of 32 KB in flight) and softmax's 40
(three); LayerNorm runs at 0.84 of a copy's bandwidth there, softmax at 0.97 (H200). Variants
of csrc/row_kernels.cuh, copied with reference_ops/{layer_norm,rms_norm} into
tests/perf/rowwise/build/mbx/<variant>/<op>: rules ahead of the library's in rk_min_blocks
(the `__launch_bounds__` minimum of blocks), for bf16 forwards with column inputs at 512 x 4
(MB512 blocks) and 128 x 4 (MB128, LayerNorm-like only, as in the product):

    base      as generated (128 x 4: 8)
    mb3       512 x 4: 3 blocks, 128 x 4: 8
    mb3_10    512 x 4: 3, 128 x 4: 10
    mb3_12    512 x 4: 3, 128 x 4: 12
    noalloc   base, the rows read with ld.global.nc.L1::no_allocate (the column inputs,
              read by every row, keep L1 to themselves)
    mb3_na    mb3 and noalloc

    python tests/perf/rowwise/min_blocks.py render          # here
    python tests/perf/rowwise/min_blocks.py run --out $OUT  # on the GPU machine
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUILD = HERE / "build" / "mbx"
sys.path.insert(0, str(HERE))
import plan_variants  # noqa: E402

VARIANTS = {
    "base": None,
    "mb3": (3, 8),
    "mb3_10": (3, 10),
    "mb3_12": (3, 12),
    "noalloc": None,
    "mb3_na": (3, 8),
}
if os.environ.get("MBX_VARIANTS"):
    VARIANTS = {v: VARIANTS[v] for v in os.environ["MBX_VARIANTS"].split()}
OPS = ("layer_norm", "rms_norm")
SHAPES = [(4096, 4096), (32768, 4096), (4096, 16384)]

RK_MIN_BLOCKS = "constexpr int rk_min_blocks() {\n"
# The variants' rules, ahead of the library's own (whose 128 x 4 rule gives 8).
MIN_BLOCKS_RULES = """  if (sizeof(T) == 2 && F::kColGrad == 0 && VPT == 4 && !CLUSTER && F::kColIn >= 1 &&
      TPR == 512 && BLOCK == 512)
    return {mb512};
  if (sizeof(T) == 2 && F::kColGrad == 0 && VPT == 4 && !CLUSTER && F::kColIn >= 2 &&
      TPR == 128 && BLOCK == 128)
    return {mb128};
"""
ROW_LOAD = "xraw[xi][i] = row_ok ? load_vec<T>(rp, colv(i), N, p.vec_ok)"
ROW_LOAD_NEW = "xraw[xi][i] = row_ok ? load_vec_stream<T>(rp, colv(i), N, p.vec_ok)"
LOAD_VEC = "template <class T>\nRK_DEV uint4 load_vec("
LOAD_VEC_STREAM = """template <class T>
RK_DEV uint4 load_vec_stream(const T* row, int64_t col, int64_t N, bool vec_ok) {
  if (vec_ok && col < N) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(row + col));
    return v;
  }
  return load_vec<T>(row, col, N, vec_ok);
}
"""
def patch(text: str, variant: str, blocks) -> str:
    """row_kernels.cuh as `variant` has it (`blocks`: its (MB512, MB128), or None)."""
    assert text.count(RK_MIN_BLOCKS) == 1
    if blocks:
        rules = MIN_BLOCKS_RULES.format(mb512=blocks[0], mb128=blocks[1])
        text = text.replace(RK_MIN_BLOCKS, RK_MIN_BLOCKS + rules)
    if variant in ("noalloc", "mb3_na"):
        assert text.count(ROW_LOAD) == 1
        text = text.replace(ROW_LOAD, ROW_LOAD_NEW)
        # after load_vec's definition: insert before store_vec's comment block
        anchor = "// Stores the VEC outputs of a vector of T's"
        assert text.count(anchor) == 1
        text = text.replace(anchor, LOAD_VEC_STREAM + "\n" + anchor)
    return text


def render() -> None:
    shutil.rmtree(BUILD, ignore_errors=True)
    for variant, blocks in VARIANTS.items():
        for op in OPS:
            plan_variants.copy_op(
                op, BUILD / variant / op, lambda text, v=variant, b=blocks: patch(text, v, b)
            )
    print("rendered into", BUILD)


def time_one(op: str, variant: str) -> None:
    import torch

    for dtype in (torch.bfloat16,):
        for rows, n in SHAPES:
            fwd, copy = plan_variants.forward_and_copy(op, dtype, rows, n)
            print(
                f"{op:>10} {variant:>6} {str(dtype)[6:]:>8} {rows:>6}x{n:<6} "
                f"fwd {fwd:7.1f} us copy {copy:7.1f} us {copy / fwd:.3f} of copy",
                flush=True,
            )


def run(out: Path) -> None:
    plan_variants.build_in_place([BUILD / v / op for v in VARIANTS for op in OPS], out, max_jobs="2")
    for _ in range(int(os.environ.get("MBX_ROUNDS", "2"))):
        for op in OPS:
            for variant in VARIANTS:
                env = dict(os.environ, PYTHONPATH=str(BUILD / variant / op))
                subprocess.run([sys.executable, __file__, "time", "--op", op, "--variant", variant], env=env)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["render", "run", "time"])
    parser.add_argument("--op")
    parser.add_argument("--variant")
    parser.add_argument("--out", type=Path, default=Path("/tmp"))
    args = parser.parse_args()
    {
        "render": render,
        "run": lambda: run(args.out),
        "time": lambda: time_one(args.op, args.variant),
    }[args.what]()
