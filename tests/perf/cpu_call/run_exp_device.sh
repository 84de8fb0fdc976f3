#!/usr/bin/env bash
# cpu_lanes.h's own exp (and erf) on a GPU machine's host (AVX512), in one call:
#
#   (here)   in tests/perf/cpu_call/build: my_gelu from erf_gelu.py's docstring, with
#            test_cpu_lanes_functions.py's PROGRAM as my_gelu/functions.cpp; my_gelu_before, the
#            same project with d1e71f8's csrc/cpu_lanes.h (SLEEF's exp); softmax_before,
#            reference_ops/softmax with that header
#   (device) bash tests/perf/cpu_call/run_exp_device.sh     # carry tests/perf/cpu_call/build
#
# Builds my_gelu as its quickstart says (with the machine's compilers as they are) and runs its
# own tests (CPU and CUDA); sweeps erf and exp against the C library (AVX2 and AVX512 builds of
# the project's csrc/cpu_lanes.h); then, with CPU-only builds in place, erf_gelu_interleaved.py
# and softmax_interleaved.py before and after, in turn. Reports under $OUT.
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
(cd "$build/my_gelu" && time python -m pip install -q --no-deps --no-build-isolation -e .) > "$out/build.txt" 2>&1
echo "build: exit $?"; tail -3 "$out/build.txt"
(cd "$build/my_gelu" && timeout 300 python -m pytest -q -p no:cacheprovider) > "$out/tests.txt" 2>&1
echo "tests: $(tail -1 "$out/tests.txt")"
torch_dir=$(python -c "import os, torch; print(os.path.dirname(torch.__file__))")
for isa in avx2 avx512; do
  define=""; [ $isa = avx512 ] && define=-DCPU_LANES_AVX512
  (cd "$build/my_gelu" && c++ $define -std=c++17 -O2 -w -I"$torch_dir/include" functions.cpp -o functions_$isa \
     -L"$torch_dir/lib" -ltorch_cpu -lc10 -Wl,-rpath,"$torch_dir/lib" && ./functions_$isa) > "$out/sweep_$isa.txt" 2>&1
  echo "sweep $isa: exit $?"; tail -2 "$out/sweep_$isa.txt"
done
for project in my_gelu_before softmax_before; do
  (cd "$build/$project" && USE_CUDA=0 python setup.py build_ext --inplace) > "$out/build_$project.txt" 2>&1
  echo "build $project: exit $?"
done
(cd reference_ops/softmax && USE_CUDA=0 python setup.py build_ext --inplace) > "$out/build_softmax.txt" 2>&1
echo "build softmax: exit $?"
# The editable my_gelu is the one imported from /tmp; PYTHONPATH puts the one before first.
cd /tmp
for round in 1 2; do
  PYTHONPATH=$build/my_gelu_before python "$here/tests/perf/cpu_call/erf_gelu_interleaved.py" before
  python "$here/tests/perf/cpu_call/erf_gelu_interleaved.py" after
done > "$out/erf_gelu.txt" 2>&1
cat "$out/erf_gelu.txt"
for round in 1 2; do
  PYTHONPATH=$build/softmax_before python "$here/tests/perf/cpu_call/softmax_interleaved.py" before
  PYTHONPATH=$here/reference_ops/softmax python "$here/tests/perf/cpu_call/softmax_interleaved.py" after
done > "$out/softmax.txt" 2>&1
cat "$out/softmax.txt"
