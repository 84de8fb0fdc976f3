#!/usr/bin/env bash
# On the GPU machine (torch 2.11 there): the stable wheels built on the 2-core machine
# against torch 2.15 (fused_axpby_stable, matmul_stable), installed without a rebuild, run
# their projects' own tests (CPU and CUDA); then reference_ops/fused_axpby and
# reference_ops/matmul are built there on torch's own ABI and each pair is timed side by
# side. Carried: .whl/ (the repaired wheels, the unrepaired ones in .whl/raw/, and a copy of
# each project's tests/ in .whl/<op>_tests/). SKIP_TESTS=1 times only.
set -euo pipefail
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)"
ldd --version | head -1
root=$PWD
for op in fused_axpby matmul; do
  # The manylinux wheel (auditwheel repair); a glibc older than its tag takes the build's own.
  python -m pip install -q --no-deps --no-index --upgrade --target /tmp/stable_site .whl/${op}_stable-*.whl ||
    python -m pip install -q --no-deps --no-index --upgrade --target /tmp/stable_site .whl/raw/${op}_stable-*.whl
done
export PYTHONPATH=/tmp/stable_site
for op in fused_axpby matmul; do
  rm -rf /tmp/${op}_tests && cp -r .whl/${op}_tests /tmp/${op}_tests
  cd /tmp/${op}_tests
  python -c "import torch, ${op}_stable as m; print('${op}_stable wheel', m.__file__, 'built on torch', m._build_info.TORCH_VERSION, 'target', m._build_info.STABLE_TARGET, 'WITH_CUDA', m.WITH_CUDA)"
  [ "${SKIP_TESTS:-0}" = 1 ] || python -m pytest -q -p no:cacheprovider -W ignore tests 2>&1 | tail -2
  cd "$root/reference_ops/$op"
  python -m pip install -q --no-build-isolation -e . 2>&1 | tail -3
  cd /tmp
  python "$root/tests/perf/stable_abi/compare_abis.py" --torch-package $op \
      --stable-package ${op}_stable --op $op --json "$OUT/compare_$op.json"
  cd "$root"
done
