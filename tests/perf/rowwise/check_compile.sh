#!/bin/bash
# Compiles check_compile.cu for a generated project's default archs with torch's flags.
#   bash tests/perf/rowwise/check_compile.sh [c++17|c++20] [out-dir]   (about 4 min on 2 cores)
# Writes <out-dir>/ptxas_<std>.txt (registers and spills per kernel and arch).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
STD=${1:-c++17}
OUT=${2:-/tmp}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
FLAGS="-std=$STD -O3 --expt-relaxed-constexpr -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__
  -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__"
ARCHS="-gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
  -gencode arch=compute_90,code=compute_90 -gencode arch=compute_90a,code=sm_90a"
# The library as generated projects get it: the template's copy.
mkdir -p "$OUT/rowk_include" && cp "$HERE"/../../../templates/project/csrc/*row_kernels.cuh* "$OUT/rowk_include/row_kernels.cuh"
$NVCC $FLAGS $ARCHS --threads 2 -Xptxas -v -I"$HERE" -I"$OUT/rowk_include" -c "$HERE/check_compile.cu" -o "$OUT/check_compile_$STD.o" \
  > "$OUT/ptxas_$STD.txt" 2>&1 || { tail -30 "$OUT/ptxas_$STD.txt"; exit 1; }
echo "compiled ($STD): $(grep -c 'Used' "$OUT/ptxas_$STD.txt") kernel builds; log $OUT/ptxas_$STD.txt"
