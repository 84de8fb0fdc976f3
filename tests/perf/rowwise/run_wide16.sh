#!/usr/bin/env bash
# Device run: 2-byte backwards (two row inputs or column outputs: 16 elements a thread) at
# 16384 columns run 512 threads of 32 elements (the planner's "wide" rule) against what the
# rule replaced (a cluster of two 512 x 2 blocks): each reference op copied with the rule made
# switchable (RK_NO_WIDE16=1 turns it off), forward + backward timed both ways by
# bench_generated.py (without compile and Liger).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
B=tests/perf/rowwise/build/wide16
rm -rf $B && mkdir -p $B
RULE='if (!chosen \&\& !few_long \&\& VEC == 8 \&\& max_elems == 16 \&\& fits_wide(512, nvec)) {'
for op in layer_norm rms_norm softmax; do
  cp -r reference_ops/$op $B/$op && rm -rf $B/$op/build $B/$op/$op/_C*.so
  sed -i "s/$RULE/if (!chosen \&\& !few_long \&\& VEC == 8 \&\& max_elems == 16 \&\& fits_wide(512, nvec) \&\& !std::getenv(\"RK_NO_WIDE16\")) {/; s/#include <map>/#include <map>\n#include <cstdlib>/" $B/$op/csrc/row_kernels.cuh
  grep -c RK_NO_WIDE16 $B/$op/csrc/row_kernels.cuh
  (cd $B/$op && MAX_JOBS=5 python setup.py build_ext --inplace > "$OUT/build_wide16_$op.log" 2>&1; echo "$op build $?") &
done
wait
for round in 1 2; do
  for op in layer_norm rms_norm softmax; do
    for off in 0 1; do
      if [ $off = 1 ]; then export RK_NO_WIDE16=1; else unset RK_NO_WIDE16; fi
      PYTHONPATH=$B/$op python tests/perf/rowwise/bench_generated.py --op $op --label wide16_off$off \
        --out "$OUT" --skip compile,liger --shapes 4096x16384 1024x16384 2>&1 | grep "\[" | sed "s/^/no_wide16=$off /"
    done
  done
done
