#!/usr/bin/env bash
# Device run: check_stream_rows.py for the library before the looped streaming kernel
# (build/planx_base, rendered from the commit before it as run_looped.sh says) and for
# reference_ops as they are (built in place here), checks and timings, in turn.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
B=tests/perf/rowwise/build
mkdir -p "$OUT/builds"
for op in layer_norm rms_norm softmax; do
  (cd reference_ops/$op && MAX_JOBS=5 python setup.py build_ext --inplace > "$OUT/builds/ref_$op.log" 2>&1) &
done
PLANX_BUILDS="$B/planx_base" MAX_JOBS=5 python tests/perf/rowwise/plan_variants.py build --out "$OUT/builds" &
wait
P=tests/perf/rowwise/check_stream_rows.py
R=reference_ops
for round in 1 2; do
  PYTHONPATH=$B/planx_base/layer_norm:$B/planx_base/rms_norm:$B/planx_base/softmax python $P --label before
  PYTHONPATH=$R/layer_norm:$R/rms_norm:$R/softmax python $P --label looped
done
