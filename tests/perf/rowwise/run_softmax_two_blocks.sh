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
PLANX_BUILDS="$B/planx_sm $B/planx_sm_mb" PLANX_OPS=softmax PLANX_DTYPES=float32 PLANX_PLANS="" \
  PLANX_SHAPES=4096x16384,8192x16384,1024x16384,4096x12288 PLANX_ROUNDS=2 \
  python tests/perf/rowwise/plan_variants.py run --out "$OUT" 2>&1 | grep "of copy\|^=="
