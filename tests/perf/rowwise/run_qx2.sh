#!/usr/bin/env bash
# Device run 2: the benchmarks against a copy into the output's dtype, and quant_mul (the
# quantizer's division per row instead of per element).
set -u
cd "$(dirname "$0")/build/qx"
nvidia-smi --query-gpu=name --format=csv,noheader
start=$(date +%s)
python -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1; echo "build exit $? in $(( $(date +%s) - start )) s"
python -m pytest -q -p no:cacheprovider tests/test_quant_mul.py 2>&1 | tail -2
for spec in "quant bfloat16" "quant_mul bfloat16" "quant_mul float32" "quant_u8 bfloat16" "lsm32 bfloat16" "lsm32 float32"; do
  set -- $spec
  python benchmarks/bench_$1.py --dtype $2 --json "$OUT/$1_$2.json" 2>&1 | grep -v Warning | grep -v "cpu = _conv\|Online softmax\|split the reduction\|important use case\|^softmax.\$\|warnings.warn\|^\$"
done
