#!/usr/bin/env bash
# Device run: float rows of 4097-8192 columns (512 threads x 4 vectors; LayerNorm's forward
# takes 82 registers there, one block a multiprocessor) compiled for two blocks a
# multiprocessor (plan_variants.py's PLANX_MIN_BLOCKS="512,4,2"), against the library. Render
# first, here:
#   PLANX_OPS="layer_norm rms_norm" python tests/perf/rowwise/plan_variants.py render
#   PLANX_OPS="layer_norm rms_norm" PLANX_MIN_BLOCKS="512,4,2" \
#     PLANX_BUILD=tests/perf/rowwise/build/planx_mb4 python tests/perf/rowwise/plan_variants.py render
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
B=tests/perf/rowwise/build
PLANX_BUILDS="$B/planx $B/planx_mb4" PLANX_OPS="layer_norm rms_norm" PLANX_DTYPES=float32 PLANX_PLANS="" \
  PLANX_SHAPES=4096x8192,16384x8192,4096x6144,8192x5120,4096x4100 PLANX_ROUNDS=2 \
  python tests/perf/rowwise/plan_variants.py run --out "$OUT" 2>&1 | grep "of copy\|^=="
