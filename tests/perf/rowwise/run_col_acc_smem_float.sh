#!/usr/bin/env bash
# Device run: reference_ops as committed with float rows of 8193-16384 columns with column
# outputs (RMSNorm and LayerNorm backwards) as one 1024 x 4 block, accumulators in shared
# memory: built in place, forward and every gradient against torch (float64), some under
# memcheck, the CUDA tests, and forward + backward (float32) against torch.compile.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
R=reference_ops
for op in layer_norm rms_norm softmax; do
  (cd $R/$op && MAX_JOBS=5 python setup.py build_ext --inplace > "$OUT/build_$op.log" 2>&1; echo "$op build $?") &
done
wait
echo "== checks against torch (float64), forward and every gradient"
PYTHONPATH=$R/layer_norm:$R/rms_norm python tests/perf/rowwise/check_stream_rows.py --ops layer_norm,rms_norm \
  --shapes 4096x16384+0,300x16384+1,700x16383+0,64x16384+0,1000x13000+0,2000x8193+0,5000x12288+0,200x8192+0
echo "== under compute-sanitizer (memcheck)"
PYTHONPATH=$R/layer_norm:$R/rms_norm compute-sanitizer --tool memcheck --print-limit 4 python \
  tests/perf/rowwise/check_stream_rows.py --ops layer_norm,rms_norm --shapes 64x16384+0,300x16384+1,200x16383+0,150x8193+0 2>&1 \
  | grep -v "Host Frame\|^=========  *$"
for op in layer_norm rms_norm softmax; do
  echo "$op CUDA tests: $(cd $R/$op && python -m pytest -q -p no:cacheprovider tests -k cuda 2>&1 | tail -1)"
done
export PLANX_NO_BUILD=1 PLANX_OPS="layer_norm rms_norm" PLANX_DTYPES=float32 PLANX_BACKWARD=1 PLANX_PLANS=""
export PLANX_SHAPES=4096x16384,8192x16384,2048x16384
P=tests/perf/rowwise/plan_variants.py
echo "== reference_ops and torch.compile"
PLANX_COMPILE=1 PLANX_BUILD=$R python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error"
echo "== reference_ops again"
PLANX_BUILD=$R python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error"
