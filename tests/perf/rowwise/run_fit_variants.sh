#!/usr/bin/env bash
# Device run: the copies of a variants script (fit_variants.py, the default, or
# fit_spec_variants.py) built and timed in one call, two rounds, beside rows_per_thread_probe
# (built here on the device); the fit kernels' registers from cuobjdump.
#   bash tests/perf/rowwise/run_fit_variants.sh [fit_spec_variants]
set -u
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
P=tests/perf/rowwise
VARIANTS=${1:-fit_variants}
WORK=$(cd $P && python -c "import $VARIANTS; print($VARIANTS.WORK)")
(nvcc -O3 -std=c++17 -arch=sm_90 $P/rows_per_thread_probe.cu -o /tmp/probe > "$OUT/probe_build.log" 2>&1; echo "probe build $?") &
python $P/$VARIANTS.py build
wait
for so in $WORK/*/*/_C*.so; do
  echo "== $so"
  cuobjdump -res-usage "$so" 2>/dev/null | grep -A1 "row_kernel_fit" | grep -o "Function [^:]*\|REG:[0-9]*\|STACK:[0-9]*" \
    | paste - - - | c++filt | sed 's/rowk::RowParams<//; s/(anonymous namespace)::/ /g' | cut -c1-160
done | tee "$OUT/registers.txt"
python $P/$VARIANTS.py time 2>&1 | grep -v Warn | tee "$OUT/$VARIANTS.txt"
/tmp/probe 25 | tee "$OUT/probe.txt"
