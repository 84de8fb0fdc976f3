#!/usr/bin/env bash
# Device run: Nsight Compute on softmax's bf16 backward at 4096 x 16384 (softmax_backward_ncu.py),
# ours (the library's kernel: fit_backward_variant.py's build without RK_FIT_BWD) against
# Liger-Kernel's and torch.mul. Carry .whl (Liger-Kernel's wheel) and
# tests/perf/rowwise/build/fitbwd (built here unless a build is left from an earlier call).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
[ -d /tmp/site/liger_kernel ] || python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
D=tests/perf/rowwise/build/fitbwd/softmax
ls $D/softmax/_C*.so >/dev/null 2>&1 || (cd $D && MAX_JOBS=8 python setup.py build_ext --inplace > "$OUT/build_fitbwd.log" 2>&1; echo "build $?")
PYTHONPATH=$D:/tmp/site ncu --clock-control none --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  -k regex:'row_kernel|backward|mul' python tests/perf/rowwise/softmax_backward_ncu.py > "$OUT/ncu.txt" 2>&1
echo "ncu $?"
grep -E "^  [a-z_:<]|==PROF==|call |Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|L2 Hit|L1/TEX Hit|Stall|Warp Cycles Per Issued|Issued Warp|Mem Busy|Max Bandwidth|Waves Per SM|Elapsed Cycles|Shared Memory Config" "$OUT/ncu.txt" | cut -c1-160
