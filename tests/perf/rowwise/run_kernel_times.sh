#!/usr/bin/env bash
# Device run: the three rowwise reference ops built in place, then kernel_times.py.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
for op in layer_norm rms_norm softmax; do
  (cd reference_ops/$op && MAX_JOBS=5 python setup.py build_ext --inplace > "$OUT/build_$op.log" 2>&1; echo "$op build $?") &
done
wait
R=reference_ops
PYTHONPATH=$R/softmax:$R/rms_norm:$R/layer_norm timeout 300 python tests/perf/rowwise/kernel_times.py "$@" 2>&1 \
  | grep -v "Warning\|warn" | tee "$OUT/kernel_times.txt"
