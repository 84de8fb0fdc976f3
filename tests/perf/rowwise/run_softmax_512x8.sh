#!/usr/bin/env bash
# Device run: float softmax rows of 12288-16384 columns at 512 threads x 8 vectors compiled for
# two blocks a multiprocessor (Liger's layout: 512 threads of 32 floats), against the
# planner's 1024 x 4 with the ring. Its forward kernel now spills 60 bytes at 64 registers
# (ptxas -v, sm_90; 160 when last timed, at 0.80 of a copy). Render first, here:
#   PLANX_EXTRA="512,8" PLANX_MIN_BLOCKS="512,8,2" PLANX_OPS=softmax \
#     PLANX_BUILD=tests/perf/rowwise/build/planx_sm8 python tests/perf/rowwise/plan_variants.py render
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
P=tests/perf/rowwise/plan_variants.py
export PLANX_BUILD=tests/perf/rowwise/build/planx_sm8 PLANX_OPS=softmax PLANX_DTYPES=float32
PLANX_PLANS="512,8" python $P build --out "$OUT"
grep -h "error" "$OUT"/build_*.log | head
export PLANX_NO_BUILD=1 PLANX_SHAPES=4096x16384,8192x16384,2048x16384,4096x12288
for round in 1 2 3; do
  echo "== round $round"
  PLANX_PLANS="512,8" python $P run --out "$OUT" 2>&1 | grep "of copy\|Error"
done
