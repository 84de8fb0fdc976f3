#!/usr/bin/env bash
# Device run: reference_ops/layer_norm and rms_norm as committed with float rows of 4097-8192
# columns compiled for two blocks a multiprocessor (rk_min_blocks), built in place: their
# CUDA tests, check_wide_float.py (outputs against torch, then under compute-sanitizer
# memcheck) and its forward timings; then, where the builds of run_float_512x4.sh are there
# (build/planx, build/planx_mb4), their forwards side by side on this GPU.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
B=tests/perf/rowwise/build
for op in layer_norm rms_norm; do
  (cd reference_ops/$op && MAX_JOBS=4 python setup.py build_ext --inplace > "$OUT/build_$op.log" 2>&1; echo "$op build $?") &
done
export PLANX_BUILDS="$B/planx $B/planx_mb4" PLANX_OPS=layer_norm
python tests/perf/rowwise/plan_variants.py build --out "$OUT" &
wait
for op in layer_norm rms_norm; do
  (cd reference_ops/$op && python -m pytest -q -p no:cacheprovider tests -k cuda 2>&1 | tail -2)
done
PYTHONPATH=reference_ops/layer_norm:reference_ops/rms_norm python tests/perf/rowwise/check_wide_float.py 2>&1 | grep -v "Warning\|cpu = _conv"
PYTHONPATH=reference_ops/layer_norm:reference_ops/rms_norm compute-sanitizer --tool memcheck --error-exitcode 9 \
  python tests/perf/rowwise/check_wide_float.py --no-bench 2>&1 | tail -3
echo "memcheck exit ${PIPESTATUS[0]}"
PLANX_NO_BUILD=1 PLANX_DTYPES=float32 PLANX_PLANS="" PLANX_ROUNDS=2 \
  PLANX_SHAPES=4096x8192,16384x8192,4096x6144,8192x5120,4096x16384 \
  python tests/perf/rowwise/plan_variants.py run --out "$OUT" 2>&1 | grep "of copy\|^=="
