#!/usr/bin/env bash
# Device run: float32 backwards of 16384 columns as one 1024-thread block of 4 vectors a thread
# with the column accumulators in shared memory (plan_variants.py's PLANX_FLOAT_SMEM_ACC, plan
# "1024,4" forced on backwards only), against the reference ops as committed (a cluster of two
# 512 x 4 blocks), forward + backward. Render first, here:
#   PLANX_OPS="layer_norm rms_norm" PLANX_FLOAT_SMEM_ACC=1 PLANX_BUILD=tests/perf/rowwise/build/planx_f32acc \
#     python tests/perf/rowwise/plan_variants.py render
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
B=tests/perf/rowwise/build
R=reference_ops
for op in layer_norm rms_norm; do
  (cd $R/$op && MAX_JOBS=4 python setup.py build_ext --inplace > "$OUT/build_$op.log" 2>&1; echo "$op build $?") &
done
PLANX_BUILDS="$B/planx_f32acc" PLANX_OPS="layer_norm rms_norm" MAX_JOBS=8 python tests/perf/rowwise/plan_variants.py build --out "$OUT" &
wait
echo "== checks against torch (float64), the variant's plan forced"
V=$B/planx_f32acc
RK_PLAN=1024,4 PYTHONPATH=$V/layer_norm:$V/rms_norm python tests/perf/rowwise/check_stream_rows.py --ops layer_norm,rms_norm \
  --shapes 4096x16384+0,300x16384+1,700x16383+0,64x16384+0,1000x13000+0 2>&1 | grep -v "bfloat16"
export PLANX_NO_BUILD=1 PLANX_OPS="layer_norm rms_norm" PLANX_DTYPES=float32 PLANX_BACKWARD=1
export PLANX_SHAPES=4096x16384,8192x16384,2048x16384
P=tests/perf/rowwise/plan_variants.py
for round in 1 2; do
  echo "== round $round: reference_ops"
  PLANX_BUILD=$R PLANX_PLANS="" python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error"
  echo "== round $round: accumulators in shared memory, 1024 x 4"
  PLANX_BUILD=$V PLANX_PLANS="1024,4" python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error\|RK_PLAN" | grep -v default
done
