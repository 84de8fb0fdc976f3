#!/usr/bin/env bash
# Device run 4: min/max as one instruction (min.NaN.f32): tests, NaN checks, times, ncu.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name --format=csv,noheader
(cd build/qx && python -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1; echo "build exit $?"
 python -m pytest -q -p no:cacheprovider tests/test_quant.py tests/test_q_bf16.py tests/test_nanmm.py tests/test_quant_u8.py 2>&1 | tail -2)
export PYTHONPATH=build/qx
python nan_min_max.py 2>&1 | grep -v "Warning\|cpu = _conv"
python qx_parts.py 2>&1 | grep -v "Warning\|cpu = _conv"
ncu --clock-control none -k regex:row_kernel --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum python qx_parts.py --once 2>&1 | grep -E "^op|row_kernel|duration|throughput|pipe|inst_executed" | sed -E 's/\(rowk::RowParams.*//; s/void rowk::row_kernel<([^:]*)::[^,]*,/\1 /'
