#!/usr/bin/env bash
# Device runs: float32 forwards in layouts of 32 elements a thread, which the library does not
# compile (512 x 8 at 16384 columns, Liger's layout there; 128 x 8 at 4096), against the
# planner's, through plan_variants.py on a copy rendered here. Run 1 (vpt8_h200.txt):
#   PLANX_EXTRA="512,8 128,8" python tests/perf/rowwise/plan_variants.py render
# both shapes' rows; run 2 (vpt8_two_blocks_h200.txt), 512 x 8 compiled for two blocks a
# multiprocessor (64 registers):
#   PLANX_EXTRA="512,8" PLANX_MIN_BLOCKS="512,8,2" python tests/perf/rowwise/plan_variants.py render
# 16384 columns only. Then each kernel's registers (cuobjdump). Both runs copied the library as
# it was before 2792ec4; since then it compiles 512 x 8 only for rk_wide_float specs, so a
# softmax "512,8" row would time the planner's own layout under that label.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
P=tests/perf/rowwise/plan_variants.py
PLANX_DTYPES=float32 PLANX_SHAPES=4096x16384 PLANX_PLANS="512,8" PLANX_ROUNDS=2 python $P run --out "$OUT" 2>&1 | grep "of copy"
if [ "${VPT8_RUN:-1}" = 1 ]; then
  PLANX_NO_BUILD=1 PLANX_DTYPES=float32 PLANX_SHAPES=4096x4096,32768x4096 PLANX_PLANS="128,8 512,2" PLANX_ROUNDS=2 \
    python $P run --out "$OUT" 2>&1 | grep "of copy"
fi
for op in layer_norm rms_norm softmax; do
  so=$(ls tests/perf/rowwise/build/planx/$op/$op/_C*.so)
  cuobjdump -res-usage "$so" | grep -A1 "row_kernel[_a-z]*I.*fLi\(512ELi8\|128ELi8\|1024ELi4\|256ELi4\)E" \
    | grep -o "Li[0-9]*ELi[0-9]*E\|FwdSpec\|ForwardSpec\|BackwardSpec\|REG:[0-9]* STACK:[0-9]*" | paste -sd' ' | sed "s/^/$op /"
done
