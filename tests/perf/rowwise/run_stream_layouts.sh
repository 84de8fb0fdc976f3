#!/usr/bin/env bash
# Device run: the library's streaming kernel (the looped kernel: a block a row, the row read
# again for each stage) at small blocks, forced by plan "sBLOCK,U", against the planner's own
# plan and torch.compile's forward, in one process per plan. Render first, here:
#   PLANX_STREAM_NOW="128,4 256,2 256,4 512,2" PLANX_BUILD=tests/perf/rowwise/build/planx_stream \
#     python tests/perf/rowwise/plan_variants.py render
# then carry tests/perf/rowwise/build/planx_stream to the GPU machine and run this there.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
export PLANX_BUILD=tests/perf/rowwise/build/planx_stream
P=tests/perf/rowwise/plan_variants.py
if [ -z "${PLANX_NO_BUILD:-}" ]; then
  python $P build --out "$OUT"
  grep -l -i "error" "$OUT"/build_*.log && tail -30 "$OUT"/build_*.log
fi
export PLANX_NO_BUILD=1 PLANX_ROUNDS=1 PLANX_COMPILE=1
export PLANX_SHAPES=${SHAPES:-4096x4096,32768x4096,4096x16384}
export PLANX_PLANS=${PLANS:-s128,4 s256,2 s256,4 s512,2 s1024,2}
for round in $(seq ${ROUNDS:-2}); do
  echo "== round $round"
  python $P run --out "$OUT" 2>&1 | grep "of copy"
done
