#!/usr/bin/env bash
# Device run: issue 14's goal table. The three rowwise reference ops (built in place unless
# already built) timed by bench_generated.py against eager, torch.compile, Liger-Kernel
# (its wheel carried under .whl, installed into /tmp/site with --no-deps) and a device copy.
#   LABEL=fit OPS="softmax layer_norm rms_norm" bash tests/perf/rowwise/run_goal_table.sh
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for op in ${OPS:-softmax layer_norm rms_norm}; do
  (cd reference_ops/$op && [ -n "$(ls $op/_C*.so 2>/dev/null)" ] || MAX_JOBS=5 python setup.py build_ext --inplace > "$OUT/build_$op.log" 2>&1; echo "$op build $?") &
done
wait
for op in ${OPS:-softmax layer_norm rms_norm}; do
  PYTHONPATH=reference_ops/$op:/tmp/site timeout ${OP_TIMEOUT:-190} python tests/perf/rowwise/bench_generated.py --op $op --label ${LABEL:-table} --out "$OUT" 2>&1 | grep -v "Warning\|warn" | tail -40
done
