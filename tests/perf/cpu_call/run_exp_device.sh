#!/usr/bin/env bash
# cpu_lanes.h's own exp, tanh and erf on a GPU machine's host (AVX512), in one call:
#
#   (here)   in tests/perf/cpu_call/build: my_gelu from erf_gelu.py's docstring, with
#            test_cpu_lanes_functions.py's PROGRAM as my_gelu/functions.cpp; my_tgelu, the tanh
#            GELU:  opgen new my_tgelu --defaults --signature "x: Tensor" \
#              --forward "0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))" \
#              --reference "torch.nn.functional.gelu(x, approximate='tanh')" \
#              --gradients "x: grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654
#                           * (1 + 0.134145 * x * x))"   (t written out as the forward's tanh)
#            and <project>_before of each, and softmax_before (reference_ops/softmax), with
#            d1e71f8's csrc/cpu_lanes.h (SLEEF's exp and tanh)
#   (device) bash tests/perf/cpu_call/run_exp_device.sh     # carry tests/perf/cpu_call/build
#            SHORT=1 bash ...: with little device time left, only the sweep and the tanh GELU
#
# Builds my_gelu as its quickstart says (with the machine's compilers as they are) and runs its
# own tests (CPU and CUDA); sweeps erf, exp and tanh against the C library (AVX2 and AVX512
# builds of the project's csrc/cpu_lanes.h); then, with CPU-only builds in place,
# gelu_interleaved.py and softmax_interleaved.py before and after, in turn. Reports under $OUT.
set -u
out=${OUT:-/tmp/exp_device}
mkdir -p "$out"
here=$(pwd)
build=$here/tests/perf/cpu_call/build
{
  nvidia-smi --query-gpu=name --format=csv,noheader
  python -c "import torch; print('torch', torch.__version__, torch.backends.cpu.get_cpu_capability())"
  grep -m1 "model name" /proc/cpuinfo; nproc; date -u
  echo "CXX=${CXX-unset}"; c++ --version | head -1
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
short=${SHORT:-}
if [ -z "$short" ]; then
  (cd "$build/my_gelu" && time python -m pip install -q --no-deps --no-build-isolation -e .) > "$out/build.txt" 2>&1
  echo "build: exit $?"; tail -3 "$out/build.txt"
  (cd "$build/my_gelu" && timeout 240 python -m pytest -q -p no:cacheprovider) > "$out/tests.txt" 2>&1
  echo "tests: $(tail -1 "$out/tests.txt")"
fi
torch_dir=$(python -c "import os, torch; print(os.path.dirname(torch.__file__))")
for isa in avx2 avx512; do
  define=""; [ $isa = avx512 ] && define=-DCPU_LANES_AVX512
  (cd "$build/my_gelu" && c++ $define -std=c++17 -O2 -w -I"$torch_dir/include" functions.cpp -o functions_$isa \
     -L"$torch_dir/lib" -ltorch_cpu -lc10 -Wl,-rpath,"$torch_dir/lib" && ./functions_$isa) > "$out/sweep_$isa.txt" 2>&1
  echo "sweep $isa: exit $?"; cat "$out/sweep_$isa.txt"
done
projects="my_tgelu my_tgelu_before"
[ -z "$short" ] && projects="$projects my_gelu_before softmax_before"
for project in $projects; do
  (cd "$build/$project" && USE_CUDA=0 python setup.py build_ext --inplace) > "$out/build_$project.txt" 2>&1 &
done
[ -z "$short" ] && (cd reference_ops/softmax && USE_CUDA=0 python setup.py build_ext --inplace) \
  > "$out/build_softmax.txt" 2>&1
wait
grep -L "copying build" "$out"/build_*.txt | sed 's/^/build failed: /'
(cd "$build/my_tgelu" && PYTHONPATH=. timeout 120 python -m pytest -q -p no:cacheprovider) > "$out/tests_tgelu.txt" 2>&1
echo "my_tgelu's tests (CPU build): $(tail -1 "$out/tests_tgelu.txt")"
# The editable my_gelu is the one imported from /tmp; PYTHONPATH puts another first.
cd /tmp
gelus=$here/tests/perf/cpu_call/gelu_interleaved.py
if [ -n "$short" ]; then
  PYTHONPATH=$build/my_tgelu_before python "$gelus" my_tgelu tanh before
  PYTHONPATH=$build/my_tgelu python "$gelus" my_tgelu tanh after
  exit
fi
for round in 1 2; do
  PYTHONPATH=$build/my_gelu_before python "$gelus" my_gelu none before
  python "$gelus" my_gelu none after
  PYTHONPATH=$build/my_tgelu_before python "$gelus" my_tgelu tanh before
  PYTHONPATH=$build/my_tgelu python "$gelus" my_tgelu tanh after
done > "$out/gelu.txt" 2>&1
cat "$out/gelu.txt"
for round in 1 2; do
  PYTHONPATH=$build/softmax_before python "$here/tests/perf/cpu_call/softmax_interleaved.py" before
  PYTHONPATH=$here/reference_ops/softmax python "$here/tests/perf/cpu_call/softmax_interleaved.py" after
done > "$out/softmax.txt" 2>&1
cat "$out/softmax.txt"
