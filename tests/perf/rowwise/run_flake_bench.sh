#!/usr/bin/env bash
# Device run: the three rowwise reference ops built in place; flake_hunt.py on layer_norm,
# then bench_generated.py's table for the ops named (default: layer_norm), Liger from
# /tmp/site (the wheel under .whl).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for op in layer_norm rms_norm softmax; do
  (cd reference_ops/$op && [ -n "$(ls $op/_C*.so 2>/dev/null)" ] || MAX_JOBS=5 python setup.py build_ext --inplace > "$OUT/build_$op.log" 2>&1; echo "$op build $?") &
done
wait
if [ -n "${SEEDS:-}" ]; then
  (cd reference_ops/layer_norm && timeout 150 python ../../tests/perf/rowwise/flake_hunt.py "$SEEDS" 2>&1 | grep -v Warning | tail -40)
fi
for op in ${OPS:-layer_norm}; do
  PYTHONPATH=reference_ops/$op:/tmp/site timeout 400 python tests/perf/rowwise/bench_generated.py --op $op --label wide_float --out "$OUT" 2>&1 | grep -v "Warning\|warn" | tail -40
done
