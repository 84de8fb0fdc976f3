#!/usr/bin/env bash
# Device run: the looped kernel (row_kernel_stream: a block a row, the row read again for
# each stage, U vectors a thread a step) at several layouts, forced by plan "sBLOCK,U",
# against the library before it (build/planx_base, rendered from the commit before). Render
# first, from a checkout of e4f2764 (looped_kernel.patch applies to its library):
#   PLANX_BUILD=tests/perf/rowwise/build/planx_base python <checkout of HEAD>/tests/perf/rowwise/plan_variants.py render
#   PLANX_STREAM=1 PLANX_STREAM_EXTRA="512,2 1024,2" PLANX_BUILD=tests/perf/rowwise/build/planx_loop \
#     python tests/perf/rowwise/plan_variants.py render
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
B=tests/perf/rowwise/build
P=tests/perf/rowwise/plan_variants.py
PLANX_BUILDS="$B/planx_base $B/planx_loop" python $P build --out "$OUT"
export PLANX_NO_BUILD=1 PLANX_ROUNDS=1
export PLANX_SHAPES=${SHAPES:-4096x4096,32768x4096,4096x16384,8192x8192,4096x2048,2048x50304}
for round in $(seq ${ROUNDS:-1}); do
  echo "== round $round: base"
  PLANX_BUILD=$B/planx_base PLANX_PLANS="" python $P run --out "$OUT" 2>&1 | grep "of copy"
  echo "== round $round: loop build"
  PLANX_BUILD=$B/planx_loop PLANX_PLANS="${PLANS:-s128,4 s256,2 s512,1 s512,2 s1024,1 s1024,2}" \
    python $P run --out "$OUT" 2>&1 | grep "of copy"
done
if [ -n "${NCU:-}" ]; then bash tests/perf/rowwise/run_looped_ncu.sh; fi
