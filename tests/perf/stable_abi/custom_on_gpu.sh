#!/usr/bin/env bash
# On the GPU machine: a stable-ABI project of custom ops rendered on the 2-core machine and
# carried in .whl/stab_custom (opgen new stab --abi stable --kind custom, then opgen add of
# gather and mixed: the ops of tests/test_custom.py), built there against its torch as a
# user builds it, its own tests run, and compute-sanitizer over the CUDA tests; then
# reference_ops/fused_axpby and fused_axpby_stable built there, fused_axpby_stable's own tests
# run, and their small calls timed side by side (small_calls.py).
set -euo pipefail
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)"
root=$PWD
cd .whl/stab_custom
time (python -m pip install -q --no-build-isolation -e . 2>&1 | tail -3)
python -m pytest -q -p no:cacheprovider -W ignore tests 2>&1 | tail -3
echo "memcheck:"
compute-sanitizer --tool memcheck --error-exitcode 1 python -m pytest -q -p no:cacheprovider -W ignore \
    -k "cuda and not compile and not gradcheck" tests 2>&1 | tail -4
cd "$root"
for op in fused_axpby fused_axpby_stable; do
  (cd reference_ops/$op && TORCH_CUDA_ARCH_LIST=9.0 python -m pip install -q --no-build-isolation -e . 2>&1 | tail -3)
done
(cd reference_ops/fused_axpby_stable && python -m pytest -q -p no:cacheprovider -W ignore tests 2>&1 | tail -2)
cd /tmp
python "$root/tests/perf/stable_abi/small_calls.py" --torch-package fused_axpby \
    --stable-package fused_axpby_stable --op fused_axpby
