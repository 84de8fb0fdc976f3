#!/usr/bin/env bash
# Device run: float softmax rows of 12288-16384 columns (1024 threads x 4 vectors, one block a
# multiprocessor and the prefetch ring) compiled for two blocks a multiprocessor instead
# (32 registers, 40 bytes spilled; no ring then), as Liger's 1024-thread softmax runs. Render
# first, here:
#   PLANX_OPS=softmax PLANX_BUILD=tests/perf/rowwise/build/planx_sm python tests/perf/rowwise/plan_variants.py render
#   PLANX_OPS=softmax PLANX_MIN_BLOCKS="1024,4,2" PLANX_BUILD=tests/perf/rowwise/build/planx_sm_mb \
#     python tests/perf/rowwise/plan_variants.py render
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
B=tests/perf/rowwise/build
for d in planx_sm planx_sm_mb; do
  (cd $B/$d/softmax && MAX_JOBS=8 python setup.py build_ext --inplace > "$OUT/build_$d.log" 2>&1; echo "$d build $?") &
done
wait
export PLANX_NO_BUILD=1 PLANX_OPS=softmax PLANX_DTYPES=float32 PLANX_PLANS=""
export PLANX_SHAPES=4096x16384,8192x16384,1024x16384,4096x12288
for round in 1 2; do
  for d in planx_sm planx_sm_mb; do
    echo "== $d"
    PLANX_BUILD=$B/$d python tests/perf/rowwise/plan_variants.py run --out "$OUT" 2>&1 | grep "of copy"
  done
done
