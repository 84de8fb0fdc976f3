#!/usr/bin/env bash
# Device run: the prefetch ring in the backward kernels of 2-byte rows of 16384 (512 threads x 4
# vectors, one block a multiprocessor: 128 registers), plan_variants.py's PLANX_RING=colgrad,
# against the library, forward + backward. Render first, here:
#   PLANX_OPS="layer_norm rms_norm" python tests/perf/rowwise/plan_variants.py render
#   PLANX_OPS="layer_norm rms_norm" PLANX_RING=colgrad PLANX_BUILD=tests/perf/rowwise/build/planx_bwdring \
#     python tests/perf/rowwise/plan_variants.py render
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
B=tests/perf/rowwise/build
PLANX_BUILDS="$B/planx $B/planx_bwdring" PLANX_OPS="layer_norm rms_norm" python tests/perf/rowwise/plan_variants.py build --out "$OUT"
grep -h "error" "$OUT"/build_*.log | head
export PLANX_NO_BUILD=1 PLANX_OPS="layer_norm rms_norm" PLANX_DTYPES=bfloat16 PLANX_BACKWARD=1
export PLANX_SHAPES=4096x16384,8192x16384,2048x16384,1024x16384
P=tests/perf/rowwise/plan_variants.py
echo "== the library and torch.compile"
PLANX_COMPILE=1 PLANX_BUILD=$B/planx PLANX_PLANS="" python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error"
for round in 1 2; do
  echo "== round $round: base"
  PLANX_BUILD=$B/planx PLANX_PLANS="" python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error"
  echo "== round $round: ring in the backward"
  PLANX_BUILD=$B/planx_bwdring PLANX_PLANS="512,4,2 512,4,3" python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error"
done
