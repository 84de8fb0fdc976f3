#!/usr/bin/env bash
# Device run: the column gradients of the 2-byte 512 x 4 backwards (rows of 16384; 128
# registers and 416-496 bytes spilled) accumulated in shared memory instead of registers
# (plan_variants.py's PLANX_SMEM_ACC), against the library, forward + backward. Render first:
#   PLANX_OPS="layer_norm rms_norm" python tests/perf/rowwise/plan_variants.py render
#   PLANX_OPS="layer_norm rms_norm" PLANX_SMEM_ACC=1 PLANX_BUILD=tests/perf/rowwise/build/planx_smemacc \
#     python tests/perf/rowwise/plan_variants.py render
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
B=tests/perf/rowwise/build
PLANX_BUILDS="$B/planx $B/planx_smemacc" PLANX_OPS="layer_norm rms_norm" python tests/perf/rowwise/plan_variants.py build --out "$OUT"
grep -h " error" "$OUT"/build_*.log | head
export PLANX_NO_BUILD=1 PLANX_OPS="layer_norm rms_norm" PLANX_DTYPES=bfloat16 PLANX_BACKWARD=1 PLANX_PLANS=""
export PLANX_SHAPES=4096x16384,8192x16384,2048x16384,1024x16384,4096x12288
P=tests/perf/rowwise/plan_variants.py
echo "== the library and torch.compile"
PLANX_COMPILE=1 PLANX_BUILD=$B/planx python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error"
for round in 1 2; do
  for b in planx_smemacc planx; do
    echo "== round $round: $b"
    PLANX_BUILD=$B/$b python $P run --out "$OUT" 2>&1 | grep "fwd+bwd\|Error"
  done
done
echo "== checks against torch (float64), forward and every gradient"
S=$B/planx_smemacc
PYTHONPATH=$S/layer_norm:$S/rms_norm python tests/perf/rowwise/check_stream_rows.py --ops layer_norm,rms_norm \
  --shapes 4096x16384+0,300x16384+1,1000x16384+8,2x16384+0,700x16383+0,5000x12288+0,333x9000+3
for op in layer_norm rms_norm; do
  echo "$op CUDA tests: $(cd $S/$op && python -m pytest -q -p no:cacheprovider tests -k cuda 2>&1 | tail -1)"
done
