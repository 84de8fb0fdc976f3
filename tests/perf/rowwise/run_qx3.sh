#!/usr/bin/env bash
# Device run 3: qx_parts.py's times, then Nsight Compute on one call of each op.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name --format=csv,noheader
(cd build/qx && python -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1; echo "build exit $?")
export PYTHONPATH=build/qx
python qx_parts.py 2>&1 | grep -v "Warning\|cpu = _conv"
ncu --clock-control none -k regex:row_kernel --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active python qx_parts.py --once 2>&1 | grep -v "Warning\|cpu = _conv\|==PROF==" | grep -E "^op|row_kernel|duration|throughput|pipe|inst_executed|registers|warps_active" | sed -E 's/\(rowk::RowParams.*//; s/void rowk::row_kernel<[^,]*,/row_kernel</'
