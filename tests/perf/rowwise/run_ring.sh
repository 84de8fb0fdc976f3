#!/usr/bin/env bash
# Device run: the prefetch ring for 2-byte rows held by 128- to 512-thread blocks (plan_variants.py's
# PLANX_RING), against the library as it is. Render first, here:
#   PLANX_OPS="layer_norm rms_norm" python tests/perf/rowwise/plan_variants.py render
#   PLANX_OPS="layer_norm rms_norm" PLANX_RING=1 PLANX_BUILD=tests/perf/rowwise/build/planx_ring \
#     python tests/perf/rowwise/plan_variants.py render
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
B=tests/perf/rowwise/build
PLANX_BUILDS="$B/planx $B/planx_ring" PLANX_OPS="layer_norm rms_norm" python tests/perf/rowwise/plan_variants.py build --out "$OUT"
export PLANX_NO_BUILD=1 PLANX_OPS="layer_norm rms_norm" PLANX_DTYPES=bfloat16 PLANX_ROUNDS=${ROUNDS:-1}
P=tests/perf/rowwise/plan_variants.py
for shapes_plans in "4096x16384;512,4,2 512,4,3 512,4,4" "4096x4096,32768x4096;128,4,3 256,2,3 128,4,2"; do
  export PLANX_SHAPES="${shapes_plans%;*}"
  echo "== base: $PLANX_SHAPES"
  PLANX_BUILD=$B/planx PLANX_PLANS="" python $P run --out "$OUT" 2>&1 | grep "of copy"
  echo "== ring build: $PLANX_SHAPES"
  PLANX_BUILD=$B/planx_ring PLANX_PLANS="${shapes_plans#*;}" python $P run --out "$OUT" 2>&1 | grep "of copy"
done
