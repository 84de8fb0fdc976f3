#!/usr/bin/env bash
# Device run: the re-reading kernel for RMSNorm-like rows of 2049-4096 columns
# (rk_reread_kernel in row_kernels.cuh). rms_norm's GPU suite (its tests on CUDA, memcheck)
# on the library with it, and the forward at other row lengths of that range, timed on the
# library before it (build/planx_stream, rendered by run_stream_layouts.sh's render step):
# the planner's plan (what the library ran before) against the streaming kernel forced at
# 256 threads x 16 elements (what rk_reread_kernel runs now), with torch.compile beside.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
export PLANX_BUILD=tests/perf/rowwise/build/planx_stream PLANX_OPS=rms_norm
P=tests/perf/rowwise/plan_variants.py
(python $P build --out "$OUT"; echo "planx build $?") &
(cd reference_ops/rms_norm && MAX_JOBS=5 python setup.py build_ext --inplace > "$OUT/build_rms_norm.log" 2>&1; echo "rms_norm in-place build $?") &
python tests/gpu_suite.py --ops rms_norm --no-bench --out "$OUT/suite" 2>&1 | tail -25
wait
export PLANX_NO_BUILD=1 PLANX_ROUNDS=1 PLANX_COMPILE=1
export PLANX_SHAPES=${SHAPES:-4096x4096,16384x2304,16384x2560,16384x3072,8192x4000}
export PLANX_PLANS=${PLANS:-s256,2 s256,4}
for round in $(seq ${ROUNDS:-2}); do
  echo "== round $round"
  python $P run --out "$OUT" 2>&1 | grep "of copy"
done
