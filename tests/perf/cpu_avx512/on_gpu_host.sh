#!/usr/bin/env bash
# The elementwise reference ops' CPU loops on an AVX512 host (the GPU machine's Xeon):
# built as a user builds them, their own CPU tests under the host's capability (AVX512
# loops) and under ATEN_CPU_CAPABILITY=avx2 (AVX2 loops), then tests/perf/cpu_threads.py.
#     bash tests/perf/cpu_avx512/on_gpu_host.sh > log.txt 2>&1
set -uo pipefail
cd "$(dirname "$0")/../../.."
python -c "import torch; print(torch.__version__, torch.backends.cpu.get_cpu_capability())"
grep -m1 "model name" /proc/cpuinfo
for op in gelu relu silu_mul; do
  (cd "reference_ops/$op" && TORCH_CUDA_ARCH_LIST=9.0 python -m pip install -q --no-build-isolation -e . 2>&1 | tail -3)
done
for op in gelu relu silu_mul; do
  echo "== $op: own CPU tests, host capability"
  (cd "reference_ops/$op" && python -m pytest -q -p no:cacheprovider -k "cpu" 2>&1 | tail -2)
  echo "== $op: own CPU tests, ATEN_CPU_CAPABILITY=avx2"
  (cd "reference_ops/$op" && ATEN_CPU_CAPABILITY=avx2 python -m pytest -q -p no:cacheprovider -k "cpu and not torch_compile" 2>&1 | tail -2)
done
python tests/perf/cpu_threads.py reference_ops/gelu gelu "torch.nn.functional.gelu(x, approximate='tanh')"
python tests/perf/cpu_threads.py reference_ops/relu relu "torch.relu(x)"
