#!/usr/bin/env bash
# Device run: fit_variants.py's copies built and timed, beside rows_per_thread_probe (built
# here on the device), in one call; the fit kernels' registers from cuobjdump.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
P=tests/perf/rowwise
(nvcc -O3 -std=c++17 -arch=sm_90 $P/rows_per_thread_probe.cu -o /tmp/probe > "$OUT/probe_build.log" 2>&1; echo "probe build $?") &
python $P/fit_variants.py build
wait
for so in /tmp/rkfit/*/*/_C*.so; do
  echo "== $so"
  cuobjdump -res-usage "$so" 2>/dev/null | grep -A1 "row_kernel_fit" | grep -o "Function [^:]*\|REG:[0-9]*\|STACK:[0-9]*" \
    | paste - - - | c++filt | sed 's/rowk::RowParams<//; s/(anonymous namespace)::/ /g' | cut -c1-160
done | tee "$OUT/registers.txt"
python $P/fit_variants.py time 2>&1 | grep -v Warn | tee "$OUT/fit_variants.txt"
/tmp/probe 25 | tee "$OUT/probe.txt"
