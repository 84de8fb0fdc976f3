#!/usr/bin/env bash
# Device run: fit_spec_variants.py's copies of layer_norm and rms_norm built and timed in one
# call (two rounds), beside rows_per_thread_probe (built here on the device); the fit kernels'
# registers and spills from cuobjdump.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
P=tests/perf/rowwise
(nvcc -O3 -std=c++17 -arch=sm_90 $P/rows_per_thread_probe.cu -o /tmp/probe > "$OUT/probe_build.log" 2>&1; echo "probe build $?") &
python $P/fit_spec_variants.py build
wait
for so in /tmp/rkspec/*/*/_C*.so; do
  echo "== $so"
  cuobjdump -res-usage "$so" 2>/dev/null | grep -A1 "row_kernel_fit" | grep -o "Function [^:]*\|REG:[0-9]*\|STACK:[0-9]*" \
    | paste - - - | c++filt | grep "bfloat16\|float" | grep -v double | cut -c1-160
done | tee "$OUT/registers.txt"
python $P/fit_spec_variants.py time 2>&1 | grep -v Warn | tee "$OUT/fit_spec_variants.txt"
/tmp/probe 25 | grep "^#\|R 1 " | tee "$OUT/probe.txt"
