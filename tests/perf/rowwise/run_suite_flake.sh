#!/usr/bin/env bash
# Device run: the GPU suite (build, CUDA tests, memcheck; no benchmark) of the three rowwise
# reference ops after the 512 x 8 float layout (stop 41), then flake_hunt.py on layer_norm
# (the once-in-16 failure of test_row_lengths_around_the_kernels_sizes).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print(torch.__version__)"
timeout 420 python tests/gpu_suite.py --ops rms_norm layer_norm softmax --no-bench --out "$OUT/suite" 2>&1 | tail -30
(cd reference_ops/layer_norm && timeout 120 python ../../tests/perf/rowwise/flake_hunt.py "${SEEDS:-60}" 2>&1 | grep -v Warning | tail -40)
