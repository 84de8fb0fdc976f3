#!/usr/bin/env bash
# The short form of run_exp_device.sh, for a call with little device time left: the sweep of
# erf, exp and tanh (AVX2 and AVX512 builds of my_gelu's csrc/cpu_lanes.h, the program of
# test_cpu_lanes_functions.py), then the tanh GELU before and after, one round, CPU-only builds.
#   (device) bash tests/perf/cpu_call/run_lanes_sweep_device.sh   # carry tests/perf/cpu_call/build
set -u
out=${OUT:-/tmp/lanes_sweep}
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
torch_dir=$(python -c "import os, torch; print(os.path.dirname(torch.__file__))")
for isa in avx2 avx512; do
  define=""; [ $isa = avx512 ] && define=-DCPU_LANES_AVX512
  (cd "$build/my_gelu" && c++ $define -std=c++17 -O2 -w -I"$torch_dir/include" functions.cpp -o functions_$isa \
     -L"$torch_dir/lib" -ltorch_cpu -lc10 -Wl,-rpath,"$torch_dir/lib" && ./functions_$isa) > "$out/sweep_$isa.txt" 2>&1
  echo "sweep $isa: exit $?"; cat "$out/sweep_$isa.txt"
done
for project in my_tgelu my_tgelu_before; do
  (cd "$build/$project" && USE_CUDA=0 python setup.py build_ext --inplace) > "$out/build_$project.txt" 2>&1 &
done
wait
(cd "$build/my_tgelu" && PYTHONPATH=. timeout 120 python -m pytest -q -p no:cacheprovider) > "$out/tests_tgelu.txt" 2>&1
echo "my_tgelu's tests (CPU build, AVX512 loops): $(tail -1 "$out/tests_tgelu.txt")"
cd /tmp
gelus=$here/tests/perf/cpu_call/gelu_interleaved.py
{
  PYTHONPATH=$build/my_tgelu_before python "$gelus" my_tgelu tanh before
  PYTHONPATH=$build/my_tgelu python "$gelus" my_tgelu tanh after
} > "$out/tanh_gelu.txt" 2>&1
cat "$out/tanh_gelu.txt"
