#!/usr/bin/env bash
# Device run 2: reference_ops/layer_norm (rk_min_blocks: three blocks at 512 threads a row)
# against the build before it (tests/perf/rowwise/build/mbx/base/layer_norm: this tree's
# copy with the last commit's csrc/row_kernels.cuh), each built in place; forwards timed in
# turn by min_blocks.py (two rounds), then the new build's timing table (bench_generated.py,
# Liger from .whl).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
nvidia-smi --query-gpu=name --format=csv,noheader
(cd reference_ops/layer_norm && MAX_JOBS=4 python setup.py build_ext --inplace > "$OUT/build_new.log" 2>&1; echo "new build $?") &
(cd tests/perf/rowwise/build/mbx/base/layer_norm && MAX_JOBS=4 python setup.py build_ext --inplace > "$OUT/build_base.log" 2>&1; echo "base build $?") &
wait
for round in 1 2; do
  PYTHONPATH=tests/perf/rowwise/build/mbx/base/layer_norm python tests/perf/rowwise/min_blocks.py time --op layer_norm --variant base 2>&1 | grep "of copy"
  PYTHONPATH=reference_ops/layer_norm python tests/perf/rowwise/min_blocks.py time --op layer_norm --variant new 2>&1 | grep "of copy"
done
PYTHONPATH=reference_ops/layer_norm:/tmp/site python tests/perf/rowwise/bench_generated.py --op layer_norm --label min_blocks --out "$OUT" 2>&1 \
  | grep -v "Warning\|cpu = _conv"
