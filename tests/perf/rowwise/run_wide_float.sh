#!/usr/bin/env bash
# Device run: reference_ops/layer_norm and rms_norm with float rows of 8193-16384 columns at
# 512 x 8 (rk_wide_float), built in place; their CUDA tests, check_wide_float.py (outputs
# against torch, then under compute-sanitizer memcheck), and its forward timings.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
for op in layer_norm rms_norm; do
  (cd reference_ops/$op && MAX_JOBS=8 python setup.py build_ext --inplace > "$OUT/build_$op.log" 2>&1; echo "$op build $?") &
done
wait
for op in layer_norm rms_norm; do
  (cd reference_ops/$op && python -m pytest -q -p no:cacheprovider tests -k cuda 2>&1 | tail -2)
done
export PYTHONPATH=reference_ops/layer_norm:reference_ops/rms_norm
python tests/perf/rowwise/check_wide_float.py 2>&1 | grep -v "Warning\|cpu = _conv"
compute-sanitizer --tool memcheck --error-exitcode 9 python tests/perf/rowwise/check_wide_float.py --no-bench 2>&1 | tail -3
echo "memcheck exit ${PIPESTATUS[0]}"
