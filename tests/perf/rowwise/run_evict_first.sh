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
export PLANX_BUILDS="$B/planx $B/planx_ef_ld $B/planx_ef_ldst" PLANX_OPS="layer_norm rms_norm"
python tests/perf/rowwise/plan_variants.py build --out "$OUT"
for d in planx_ef_ld planx_ef_ldst; do
  for op in layer_norm rms_norm; do
    echo "$d $op: $(cd $B/$d/$op && python -m pytest -q -p no:cacheprovider tests -k cuda 2>&1 | tail -1)"
  done
done
PLANX_NO_BUILD=1 PLANX_PLANS="" PLANX_SHAPES=4096x4096,32768x4096,4096x16384 PLANX_ROUNDS=2 \
  python tests/perf/rowwise/plan_variants.py run --out "$OUT" 2>&1 | grep "of copy\|^=="
