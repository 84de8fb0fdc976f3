#!/usr/bin/env bash
# Device run: a stable-ABI project with per-row outputs and rows out in another dtype
# (build/stq: quant int8 + scale, l2n y + norm with autograd, lsm32 float32).
set -u
cd "$(dirname "$0")/build/stq"
nvidia-smi --query-gpu=name --format=csv,noheader
python -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1; echo "build exit $?"
python -m pytest -q -p no:cacheprovider 2>&1 | tail -3
