#!/usr/bin/env bash
# Device run: rows loaded (ld), and outputs stored too (ldst), with an L2 evict_first policy
# in the register-held kernels (plan_variants.py's PLANX_EVICT_FIRST), against the library:
# the CUDA tests of the patched copies, then forwards of the three builds in turn, two rounds.
# Render first, here:
#   PLANX_OPS="layer_norm rms_norm" python tests/perf/rowwise/plan_variants.py render
#   for v in ld ldst; do PLANX_OPS="layer_norm rms_norm" PLANX_EVICT_FIRST=$v \
#     PLANX_BUILD=tests/perf/rowwise/build/planx_ef_$v python tests/perf/rowwise/plan_variants.py render; done
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
B=tests/perf/rowwise/build
for d in planx planx_ef_ld planx_ef_ldst; do
  for op in layer_norm rms_norm; do
    (cd $B/$d/$op && MAX_JOBS=3 python setup.py build_ext --inplace > "$OUT/build_${d}_$op.log" 2>&1; echo "$d $op build $?") &
  done
done
wait
for d in planx_ef_ld planx_ef_ldst; do
  for op in layer_norm rms_norm; do
    echo "$d $op: $(cd $B/$d/$op && python -m pytest -q -p no:cacheprovider tests -k cuda 2>&1 | tail -1)"
  done
done
export PLANX_NO_BUILD=1 PLANX_OPS="layer_norm rms_norm" PLANX_PLANS=""
export PLANX_SHAPES=4096x4096,32768x4096,4096x16384
for round in 1 2; do
  for d in planx planx_ef_ld planx_ef_ldst; do
    echo "== $d"
    PLANX_BUILD=$B/$d python tests/perf/rowwise/plan_variants.py run --out "$OUT" 2>&1 | grep "of copy"
  done
done
