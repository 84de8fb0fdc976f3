#!/usr/bin/env bash
# Device run: Nsight Compute on the looped kernel as the library builds it (build/planx_loop,
# RK_STREAM=128,4) and as looped_probe.cu writes it: LayerNorm, bf16 4096 x 4096 (carry
# build/planx_loop, rendered as run_looped.sh says).
set -u
B=tests/perf/rowwise/build
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,lts__t_sector_hit_rate.pct,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,launch__grid_size,launch__block_size
ls $B/planx_loop/layer_norm/layer_norm/*.so > /dev/null 2>&1 || \
  PLANX_OPS=layer_norm PLANX_BUILDS="$B/planx_loop" python tests/perf/rowwise/plan_variants.py build --out "$OUT"
nvcc -O3 -std=c++17 -arch=sm_90 tests/perf/rowwise/looped_probe.cu -o /tmp/looped_probe
F="grep -v Warning"
echo "== library looped kernel, RK_STREAM=128,4"
PYTHONPATH=$B/planx_loop/layer_norm RK_STREAM=128,4 \
  ncu --clock-control none -k regex:row_kernel --metrics $M python tests/perf/rowwise/looped_ncu.py 2>&1 | $F
echo "== library, its own plans"
PYTHONPATH=$B/planx_loop/layer_norm \
  ncu --clock-control none -k regex:row_kernel --metrics $M python tests/perf/rowwise/looped_ncu.py 2>&1 | $F
# The probe's fifth launch of a looped kernel: bf16 4096 x 4096, 128 x 4, no hint (after
# 128 x 2's warm-up and three timed launches).
echo "== probe, layernorm3, 128 x 4, hint 0"
ncu --clock-control none -k regex:looped --launch-skip 4 --launch-count 1 --metrics $M \
  /tmp/looped_probe 3 3 2>&1 | $F | grep -v "^layernorm3\|^#"
