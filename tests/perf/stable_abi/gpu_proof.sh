#!/usr/bin/env bash
# On the GPU machine (torch 2.11 there): the stable wheel built on the 2-core machine against
# torch 2.15, installed without a rebuild, runs its project's own tests (CPU and CUDA); then
# fused_axpby from reference_ops/ is built there on torch's own ABI and both are timed side
# by side. Carried: .whl/ (the repaired wheel and a copy of its project's tests/).
set -euo pipefail
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)"
ldd --version | head -1
# The manylinux wheel (auditwheel repair); a glibc older than its tag takes the build's own.
python -m pip install -q --no-deps --no-index --target /tmp/stable_site .whl/fused_axpby_stable-*.whl ||
  python -m pip install -q --no-deps --no-index --target /tmp/stable_site .whl/raw/fused_axpby_stable-*.whl
ls /tmp/stable_site
export PYTHONPATH=/tmp/stable_site
root=$PWD
rm -rf /tmp/stable_tests && cp -r .whl/stable_tests /tmp/stable_tests
cd /tmp/stable_tests
python -c "import torch, fused_axpby_stable as m; print('stable wheel', m.__file__, 'built on torch', m._build_info.TORCH_VERSION, 'target', m._build_info.STABLE_TARGET, 'WITH_CUDA', m.WITH_CUDA)"
[ "${SKIP_TESTS:-0}" = 1 ] || python -m pytest -q -p no:cacheprovider -W ignore tests 2>&1 | tail -4
cd "$root/reference_ops/fused_axpby"
python -m pip install -q --no-build-isolation -e . 2>&1 | tail -3
cd /tmp
python "$root/tests/perf/stable_abi/compare_abis.py" --torch-package fused_axpby \
    --stable-package fused_axpby_stable --op fused_axpby --json "$OUT/compare_fused_axpby.json"
