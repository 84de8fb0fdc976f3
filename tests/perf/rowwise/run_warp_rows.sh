#!/usr/bin/env bash
# Device run: rows of 4096 columns held by one warp (32 threads x 16 vectors, four rows a
# 128-thread block: no block barrier) or by 64-thread blocks (8 vectors a thread for 2-byte
# rows, 16 for float), as the compiler likes them and compiled for more blocks a
# multiprocessor, against the planner's layouts. Render first, here:
#   PLANX_EXTRA="32,16 64,8 64,16" python tests/perf/rowwise/plan_variants.py render
#   PLANX_EXTRA="32,16 64,8 64,16" PLANX_MIN_BLOCKS="32,16,4 64,8,12 64,16,8" \
#     PLANX_BUILD=tests/perf/rowwise/build/planx_mb python tests/perf/rowwise/plan_variants.py render
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
B=tests/perf/rowwise/build
P=tests/perf/rowwise/plan_variants.py
PLANX_BUILDS="$B/planx $B/planx_mb" python $P build --out "$OUT"
grep -h "error" "$OUT"/build_*.log | head
export PLANX_NO_BUILD=1 PLANX_SHAPES=4096x4096,32768x4096
for round in 1 2; do
  echo "== round $round: as the compiler likes them"
  PLANX_BUILD=$B/planx PLANX_DTYPES=bfloat16 PLANX_PLANS="32,16 64,8" python $P run --out "$OUT" 2>&1 | grep "of copy\|Error"
  PLANX_BUILD=$B/planx PLANX_DTYPES=float32 PLANX_PLANS="64,16" python $P run --out "$OUT" 2>&1 | grep "of copy\|Error"
  echo "== round $round: for more blocks a multiprocessor"
  PLANX_BUILD=$B/planx_mb PLANX_DTYPES=bfloat16 PLANX_PLANS="32,16 64,8" python $P run --out "$OUT" 2>&1 | grep "of copy\|Error" | grep -v default
  PLANX_BUILD=$B/planx_mb PLANX_DTYPES=float32 PLANX_PLANS="64,16" python $P run --out "$OUT" 2>&1 | grep "of copy\|Error" | grep -v default
done
