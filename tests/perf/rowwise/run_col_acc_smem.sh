#!/usr/bin/env bash
# Device run: reference_ops/{layer_norm,rms_norm,softmax} as they are (column accumulators of
# the 2-byte 512 x 4 backwards in shared memory, rk_col_acc_smem), built in place: forward and
# every gradient against torch (float64) at shapes that take the layout and around it, some of
# them under compute-sanitizer's memcheck, the CUDA tests, and forward + backward against torch.compile (plan_variants.py's PLANX_BACKWARD
# timing on the built reference ops). The library before it: build/planx (rendered from the
# commit before, as run_smem_acc.sh says), timed in the same run.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
for op in layer_norm rms_norm softmax; do
  (cd reference_ops/$op && MAX_JOBS=5 python setup.py build_ext --inplace > "$OUT/build_$op.log" 2>&1; echo "$op build $?") &
done
[ -d tests/perf/rowwise/build/planx ] && PLANX_BUILDS=tests/perf/rowwise/build/planx PLANX_OPS="layer_norm rms_norm" \
  MAX_JOBS=4 python tests/perf/rowwise/plan_variants.py build --out "$OUT" &
wait
R=reference_ops
echo "== checks against torch (float64), forward and every gradient"
PYTHONPATH=$R/layer_norm:$R/rms_norm python tests/perf/rowwise/check_stream_rows.py --ops layer_norm,rms_norm \
  --shapes 4096x16384+0,300x16384+1,1000x16384+8,2x16384+0,700x16383+0,5000x12288+0,333x9000+3,64x16384+0
echo "== the same under compute-sanitizer (memcheck)"
PYTHONPATH=$R/layer_norm:$R/rms_norm compute-sanitizer --tool memcheck --print-limit 4 python \
  tests/perf/rowwise/check_stream_rows.py --ops layer_norm,rms_norm --shapes 64x16384+0,300x16384+1,200x16383+0 2>&1 \
  | grep -v "Host Frame\|^=========  *$"
for op in layer_norm rms_norm softmax; do
  echo "$op CUDA tests: $(cd $R/$op && python -m pytest -q -p no:cacheprovider tests -k cuda 2>&1 | tail -1)"
done
export PLANX_NO_BUILD=1 PLANX_OPS="layer_norm rms_norm" PLANX_DTYPES=bfloat16 PLANX_BACKWARD=1 PLANX_PLANS=""
export PLANX_SHAPES=4096x16384,8192x16384,2048x16384,1024x16384
P=tests/perf/rowwise/plan_variants.py
echo "== reference_ops and torch.compile"
PLANX_COMPILE=1 PLANX_BUILD=$R python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error"
for round in 1 2; do
  for b in $R tests/perf/rowwise/build/planx; do
    echo "== round $round: $b"
    PLANX_BUILD=$b python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error"
  done
done
