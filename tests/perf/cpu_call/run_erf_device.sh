#!/usr/bin/env bash
# The erf GELU of erf_gelu.py's docstring on a GPU machine's host, in one call:
#
#   (here)   cd tests/perf/cpu_call/build && opgen new my_gelu ...   (erf_gelu.py's docstring)
#            and test_cpu_lanes_erf.py's PROGRAM as my_gelu/erf_lanes.cpp
#   (device) bash tests/perf/cpu_call/run_erf_device.sh     # carry tests/perf/cpu_call/build
#
# Builds it as its quickstart says (with the machine's compilers as they are), runs its own
# tests (CPU and CUDA), the erf sweep against the C library (AVX2 and AVX512 builds of the
# project's csrc/cpu_lanes.h) and erf_gelu.py; reports under $OUT.
set -u
out=${OUT:-/tmp/erf_device}
mkdir -p "$out"
here=$(pwd)
project=tests/perf/cpu_call/build/my_gelu
{
  nvidia-smi --query-gpu=name --format=csv,noheader
  python -c "import torch; print('torch', torch.__version__, torch.backends.cpu.get_cpu_capability())"
  grep -m1 "model name" /proc/cpuinfo; nproc
  echo "CXX=${CXX-unset}"; c++ --version | head -1
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
(cd "$project" && time python -m pip install -q --no-deps --no-build-isolation -e .) > "$out/build.txt" 2>&1
echo "build: exit $?"; tail -3 "$out/build.txt"
(cd "$project" && timeout 400 python -m pytest -q -p no:cacheprovider) > "$out/tests.txt" 2>&1
echo "tests: $(tail -1 "$out/tests.txt")"
torch_dir=$(python -c "import os, torch; print(os.path.dirname(torch.__file__))")
for isa in avx2 avx512; do
  define=""; [ $isa = avx512 ] && define=-DCPU_LANES_AVX512
  (cd "$project" && c++ $define -std=c++17 -O2 -w -I"$torch_dir/include" erf_lanes.cpp -o erf_$isa \
     -L"$torch_dir/lib" -ltorch_cpu -lc10 -Wl,-rpath,"$torch_dir/lib" && ./erf_$isa) > "$out/erf_$isa.txt" 2>&1
  echo "erf sweep $isa: exit $?, $(tail -1 "$out/erf_$isa.txt")"
done
(cd /tmp && for round in 1 2; do python "$here/tests/perf/cpu_call/erf_gelu.py"; done) > "$out/erf_gelu.txt" 2>&1
cat "$out/erf_gelu.txt"
