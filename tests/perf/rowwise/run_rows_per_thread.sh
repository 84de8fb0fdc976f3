#!/usr/bin/env bash
# Device run: rows_per_thread_probe (built here, carried as build/rows_per_thread_probe) beside
# the three rowwise reference ops' kernel times (kernel_times.py), in one call.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
for op in layer_norm rms_norm softmax; do
  (cd reference_ops/$op && MAX_JOBS=5 python setup.py build_ext --inplace > "$OUT/build_$op.log" 2>&1; echo "$op build $?") &
done
tests/perf/rowwise/build/rows_per_thread_probe 25 | tee "$OUT/rows_per_thread.txt"
wait
R=reference_ops
PYTHONPATH=$R/softmax:$R/rms_norm:$R/layer_norm timeout 300 python tests/perf/rowwise/kernel_times.py 2>&1 \
  | grep -v "Warning\|warn" | tee "$OUT/kernel_times.txt"
