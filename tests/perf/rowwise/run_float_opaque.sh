#!/usr/bin/env bash
# Device run: float elements extracted anew in every pass (PLANX_FLOAT_OPAQUE) against the
# library as it is, both with 512 x 8 compiled for two blocks a multiprocessor; rendered here:
#   export PLANX_EXTRA="512,8" PLANX_MIN_BLOCKS="512,8,2"
#   PLANX_BUILD=tests/perf/rowwise/build/planx_base python tests/perf/rowwise/plan_variants.py render
#   PLANX_FLOAT_OPAQUE=1 PLANX_BUILD=tests/perf/rowwise/build/planx_opaque python tests/perf/rowwise/plan_variants.py render
# float32 forwards, the two builds in turn, two rounds; then the registers of each.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
P=tests/perf/rowwise/plan_variants.py
python - <<'PY'
import os, sys
from pathlib import Path
sys.path.insert(0, "tests/perf/rowwise")
import plan_variants as pv
dirs = [Path(f"tests/perf/rowwise/build/{b}/{op}") for b in ("planx_base", "planx_opaque") for op in pv.OPS]
pv.build_in_place(dirs, Path(os.environ["OUT"]), max_jobs="3")
PY
export PLANX_NO_BUILD=1 PLANX_DTYPES=float32
for round in 1 2; do
  for b in planx_base planx_opaque; do
    PLANX_BUILD=tests/perf/rowwise/build/$b PLANX_SHAPES=4096x16384 PLANX_PLANS="512,8" python $P run 2>&1 | grep "of copy" | sed "s/^/$b /"
    PLANX_BUILD=tests/perf/rowwise/build/$b PLANX_SHAPES=4096x4096,32768x4096 PLANX_PLANS="" python $P run 2>&1 | grep "of copy" | sed "s/^/$b /"
  done
done
for b in planx_base planx_opaque; do
  for op in layer_norm rms_norm softmax; do
    so=$(ls tests/perf/rowwise/build/$b/$op/$op/_C*.so)
    cuobjdump -res-usage "$so" | grep -A1 "row_kernel[_a-z]*I.*fLi\(512ELi8\|1024ELi4\|256ELi4\)E" \
      | grep -o "Li[0-9]*ELi[0-9]*E\|ForwardSpec\|BackwardSpec\|REG:[0-9]* STACK:[0-9]*" | paste -sd' ' | sed "s/^/$b $op /"
  done
done
