#!/bin/bash
# On the GPU machine: the reference ops' tests with inputs seeded by each test's id (build,
# CUDA tests, memcheck), then layer_norm's CUDA tests under many --input-seed values, to find
# the inputs of the failure seen once in 16 runs on 2026-11-27 (tests/perf/rowwise/NOTES.md,
# "A failure once in 16 runs"), and whether a failure comes back with its seed.
#   bash tests/perf/seeded_tests_gpu.sh OUT_DIR SECONDS_FOR_SEEDS
out=${1:-/tmp/seeded}; budget=${2:-200}
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
date -u
python tests/gpu_suite.py --ops relu gelu softmax rms_norm layer_norm --no-bench --out "$out" 2>&1 | tail -12
rm -rf /tmp/ln && cp -r reference_ops/layer_norm /tmp/ln && cd /tmp/ln || exit 1
python -m pip install --no-build-isolation -e . -q 2>&1 | tail -2
python - "$budget" > "$out/seeds.log" 2>&1 <<'PY'
import sys, time
import pytest


def cuda_tests(seed: int) -> int:
    return pytest.main(["-q", "-p", "no:cacheprovider", "-k", "cuda and not compile and not opcheck",
                        "--input-seed", str(seed), "tests"])


budget, began, failed, seed = float(sys.argv[1]), time.time(), [], 0
while time.time() - began < budget:
    seed += 1
    if cuda_tests(seed) != 0:
        failed.append(seed)
print(f"SEEDS 1..{seed} run in {time.time() - began:.0f} s; failed: {failed}")
for seed in failed[:2]:  # does the failure come back with its seed?
    print(f"SEEDS again {seed}: exit {cuda_tests(seed)}")
PY
grep -E "^SEEDS|^FAILED" "$out/seeds.log" | sort | uniq -c | head -30
