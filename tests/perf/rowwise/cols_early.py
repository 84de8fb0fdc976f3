"""When should a rowwise forward load its per-column inputs (weight, bias)? An experiment,
not the product. LayerNorm's bf16 forward stays at 0.83-0.86 of a copy's bandwidth on an
H200 where softmax (no column inputs, same layouts) reaches 0.95-0.99 (NOTES.md). In
reference_ops' kernels the output pass loads vector i's weight and bias, computes, stores,
then loads vector i + 1's: VPT dependent round trips to L1/L2 after the reductions, on
every block's critical path. Variants of csrc/row_kernels.cuh, copied with
reference_ops/{layer_norm,rms_norm} into tests/perf/rowwise/build/colx/<variant>/<op>:

    base    as generated
    batch   the output pass loads every vector's column inputs first (one round trip)
    early   the output pass's column inputs loaded with the row, before the reductions
            (their latency under the row's DRAM read; registers held across the reductions)

plus plan_variants.py's RK_PLAN="tpr,vpt" override, each (variant, plan) timed in its own
process.

    python tests/perf/rowwise/cols_early.py render          # here
    python tests/perf/rowwise/cols_early.py run --out $OUT  # on the GPU machine
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
BUILD = HERE / "build" / "colx"
sys.path.insert(0, str(HERE))
import plan_variants  # noqa: E402

VARIANTS = ("base", "batch", "early")
OPS = tuple(os.environ.get("COLX_OPS", "layer_norm rms_norm").split())
DTYPES = os.environ.get("COLX_DTYPES", "bfloat16 float32").split()
SHAPES = [(4096, 4096), (32768, 4096), (4096, 16384)]
PLANS = {4096: ["", "256,2", "128,4"], 16384: ["", "1024,2"]}  # "": the planner's own

OUTPUT_PASS = """        for (int i = 0; i < VPT; ++i) {
          uint4 cv[KC];
          load_cols(i, z, cv);
          A of[VEC];"""
BATCH = """        uint4 cvs[VPT][KC];
#pragma unroll
        for (int i = 0; i < VPT; ++i) load_cols(i, z, cvs[i]);
#pragma unroll
        for (int i = 0; i < VPT; ++i) {
          const uint4(&cv)[KC] = cvs[i];
          A of[VEC];"""
EARLY_USE = """        for (int i = 0; i < VPT; ++i) {
          const uint4(&cv)[KC] = cearly[i];
          A of[VEC];"""
LOAD_COLS_END = """          cv[ci] = load_vec<T>(p.col[ci] + z, colv(i), N, p.vec_ok);
      }
    };
"""
EARLY_LOAD = (
    LOAD_COLS_END
    + """    uint4 cearly[VPT][KC];
    {
      const uint32_t z0 = opaque_zero();
#pragma unroll
      for (int i = 0; i < VPT; ++i) load_cols(i, z0, cearly[i]);
    }
"""
)


def patch(text: str, variant: str) -> str:
    assert text.count(OUTPUT_PASS) == 1 and text.count(LOAD_COLS_END) == 1
    text = plan_variants.with_plan_override(text)
    if variant == "batch":
        text = text.replace(OUTPUT_PASS, BATCH)
    elif variant == "early":
        text = text.replace(OUTPUT_PASS, EARLY_USE).replace(LOAD_COLS_END, EARLY_LOAD)
    return text


def render() -> None:
    shutil.rmtree(BUILD, ignore_errors=True)
    for variant in VARIANTS:
        for op in OPS:
            plan_variants.copy_op(op, BUILD / variant / op, lambda text, v=variant: patch(text, v))
    print("rendered into", BUILD)


def time_one(op: str, variant: str) -> None:
    import torch

    plan = os.environ.get("RK_PLAN", "")
    for dtype in [getattr(torch, d) for d in DTYPES]:
        for rows, n in SHAPES:
            if plan not in PLANS[n]:
                continue
            fwd, copy = plan_variants.forward_and_copy(op, dtype, rows, n)
            print(
                f"{op:>10} {variant:>5} {str(dtype)[6:]:>8} {rows:>6}x{n:<6} plan {plan or 'default':>7} "
                f"fwd {fwd:7.1f} us copy {copy:7.1f} us {copy / fwd:.3f} of copy",
                flush=True,
            )


def run(out: Path) -> None:
    if not os.environ.get("COLX_NO_BUILD"):
        plan_variants.build_in_place([BUILD / v / op for v in VARIANTS for op in OPS], out, max_jobs="2")
    plans = sorted({p for v in PLANS.values() for p in v})
    for _ in range(int(os.environ.get("COLX_ROUNDS", "1"))):
        for op in OPS:
            for plan in plans if op == "layer_norm" else [""]:
                for variant in VARIANTS:
                    env = dict(os.environ, PYTHONPATH=str(BUILD / variant / op), RK_PLAN=plan)
                    if plan == "":
                        env.pop("RK_PLAN")
                    subprocess.run(
                        [sys.executable, __file__, "time", "--op", op, "--variant", variant], env=env
                    )


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
