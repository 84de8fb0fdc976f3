#!/usr/bin/env bash
# Device run: the rowwise ops with an output dtype of their own (tests/perf/rowwise/build/qx,
# rendered by opgen: quant int8, lsm32 float32, quant_u8 uint8): build, their tests, benchmarks.
set -u
cd "$(dirname "$0")/build/qx"
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
start=$(date +%s)
python -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1; echo "build exit $? in $(( $(date +%s) - start )) s"
python -m pytest -q -p no:cacheprovider 2>&1 | tail -4
for spec in "quant bfloat16" "quant float32" "quant_u8 bfloat16" "lsm32 bfloat16" "lsm32 float16"; do
  set -- $spec
  python benchmarks/bench_$1.py --dtype $2 --json "$OUT/$1_$2.json" 2>&1 | grep -v Warning | grep -v "cpu = _conv"
done
