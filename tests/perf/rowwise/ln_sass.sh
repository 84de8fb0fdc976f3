#!/usr/bin/env bash
# LayerNorm's and softmax's bf16 forward kernels at 256 threads x 2 vectors (the 4096-column
# layout), as SASS, for reading what LayerNorm's 16 extra registers hold (NOTES.md,
# "LayerNorm's forward, taken apart"). Compiles the reference ops' kernel files alone with
# nvcc for sm_90 and writes into $OUT: resource usage of every kernel, and the SASS of the two.
set -u
cd "$(dirname "$0")/../../.."
for op in layer_norm softmax; do
  nvcc -std=c++17 -arch=sm_90 -O3 -cubin -o "$OUT/$op.cubin" "reference_ops/$op/csrc/${op}_kernel.cu" || exit 1
  cuobjdump -res-usage "$OUT/$op.cubin" > "$OUT/${op}_res_usage.txt"
  fn=$(cuobjdump -symbols "$OUT/$op.cubin" 2>/dev/null | grep -o '_ZN4rowk10row_kernelIN[^ ]*ForwardSpecE13__nv_bfloat16Li256ELi2ELi256ELb0ELb0EEEvNS_9RowParamsIT_T0_EE' | head -1)
  echo "$op: $fn"
  cuobjdump -sass -fun "$fn" "$OUT/$op.cubin" > "$OUT/${op}_fwd_bf16_256x2.sass"
  grep -A1 "$fn" "$OUT/${op}_res_usage.txt" | head -3
  wc -l "$OUT/${op}_fwd_bf16_256x2.sass"
done
