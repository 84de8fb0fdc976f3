#!/usr/bin/env bash
# Device run: the streaming kernel (a block a row, the row re-read for each stage) at 256,
# 512 and 1024 threads, with and without L2 eviction hints (plan_variants.py's PLANX_STREAM),
# against the library's own plans (build/planx). Render first, here:
#   PLANX_OPS="layer_norm rms_norm" python tests/perf/rowwise/plan_variants.py render
#   PLANX_OPS="layer_norm rms_norm" PLANX_STREAM=1 PLANX_BUILD=tests/perf/rowwise/build/planx_stream \
#     python tests/perf/rowwise/plan_variants.py render
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
B=tests/perf/rowwise/build
PLANX_BUILDS="$B/planx $B/planx_stream" PLANX_OPS="layer_norm rms_norm" python tests/perf/rowwise/plan_variants.py build --out "$OUT"
export PLANX_NO_BUILD=1 PLANX_OPS="layer_norm rms_norm" PLANX_ROUNDS=${ROUNDS:-1}
export PLANX_SHAPES=${SHAPES:-4096x4096,32768x4096,4096x16384}
P=tests/perf/rowwise/plan_variants.py
echo "== base"
PLANX_BUILD=$B/planx PLANX_PLANS="" python $P run --out "$OUT" 2>&1 | grep "of copy"
echo "== stream build"
PLANX_BUILD=$B/planx_stream PLANX_PLANS="${PLANS:-s256,0 s256,1 s512,1 s1024,1}" python $P run --out "$OUT" 2>&1 | grep "of copy"
