#!/usr/bin/env bash
# Per-row outputs measured on a GPU (tests/perf/rowwise/per_row_outputs_h200.md).
#
#   bash tests/perf/rowwise/per_row_outputs.sh render   # here, with opgen: the project `perrow`
#   bash tests/perf/rowwise/per_row_outputs.sh run      # on the GPU machine (OUT set), carrying
#                                                       # tests/perf/rowwise/build
#   bash tests/perf/rowwise/per_row_outputs.sh check    # the same without the generated benchmarks
# `run` builds perrow, runs its tests and memcheck over its CUDA tests, its benchmarks, then
# builds reference_ops/layer_norm and times it beside ln_stats (perrow_ab.py) and profiles
# both forwards at bf16 4096 x 16384 (perrow_ncu.py).
set -uo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="$root/tests/perf/rowwise/build"
OUT="${OUT:-/tmp}"
case "${1:-}" in
render)
  mkdir -p "$build" && cd "$build" && rm -rf perrow
  opgen new perrow --op ln_stats --defaults --kind rowwise \
    --signature "x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-05" --columns "weight, bias" \
    --reductions "mu = mean(x); var = mean((x - mu) * (x - mu))" \
    --forward "y: (x - mu) * rsqrt(var + eps) * weight + bias; mean: mu; rstd: rsqrt(var + eps)" \
    --reference "(torch.nn.functional.layer_norm(x, [x.shape[-1]], weight, bias, eps), x.mean(-1), torch.rsqrt(x.var(-1, unbiased=False) + eps))" \
    --grad-reductions "g1 = mean(grad_y * weight); g2 = mean(grad_y * weight * (x - mu))" \
    --gradients "x: (grad_y * weight - g1 - (x - mu) * (g2 / (var + eps))) * rsqrt(var + eps); weight: grad_y * (x - mu) * rsqrt(var + eps); bias: grad_y"
  opgen add absmax_quant -p perrow --defaults --kind rowwise --signature "x: Tensor" \
    --reductions "a = max(abs(x))" --forward "q: rint(x * 127 / max(a, 1e-12)); scale: max(a, 1e-12) / 127" \
    --reference "(torch.round(x * 127 / x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12)), x.abs().amax(dim=-1).clamp(min=1e-12) / 127)" \
    --no-backward
  opgen add l2_norm -p perrow --defaults --kind rowwise --signature "x: Tensor" --reductions "ss = sum(x * x)" \
    --forward "y: x / sqrt(ss); norm: sqrt(ss)" --reference "(x / x.norm(dim=-1, keepdim=True), x.norm(dim=-1))" \
    --grad-reductions "gy = sum(grad_y * y)" --gradients "x: (grad_y - y * gy) / sqrt(ss)"
  ;;
run|check)
  cd "$build/perrow"
  nvidia-smi --query-gpu=name --format=csv,noheader
  python -m pip install -q --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1
  python -m pytest -q -p no:cacheprovider tests 2>&1 | tail -3 | tee "$OUT/tests.txt"
  compute-sanitizer --tool memcheck --error-exitcode 1 python -m pytest -q -p no:cacheprovider -x tests \
    -k "cuda and (lengths_around or storage_offset or empty or gradients_match or long_rows)" 2>&1 \
    | tail -3 | tee "$OUT/memcheck.txt"
  if [ "$1" = run ]; then
    for dt in bfloat16 float32; do python benchmarks/bench_ln_stats.py --dtype $dt 2>&1 | tail -6; done \
      | tee "$OUT/bench_ln_stats.txt"
    python benchmarks/bench_absmax_quant.py --dtype bfloat16 2>&1 | tail -6 | tee "$OUT/bench_absmax_quant.txt"
  fi
  cd "$root"
  (cd reference_ops/layer_norm && python setup.py build_ext --inplace > "$OUT/build_layer_norm.log" 2>&1)
  PYTHONPATH=reference_ops/layer_norm python tests/perf/rowwise/perrow_ab.py 2>&1 | tee "$OUT/perrow_ab.txt"
  PYTHONPATH=reference_ops/layer_norm ncu --clock-control none -k regex:row_kernel \
    --metrics gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active \
    python tests/perf/rowwise/perrow_ncu.py 2>&1 | grep -E "row_kernel|duration|registers|warps_active" \
    | sed 's/(RowParams.*//' | tee "$OUT/ncu.txt"
  ;;
*) echo "usage: $0 render|run|check" >&2; exit 2 ;;
esac
