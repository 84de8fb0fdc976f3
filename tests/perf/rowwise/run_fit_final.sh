#!/usr/bin/env bash
# Device run: the three rowwise reference ops as committed, built in place; each forward
# timed in turn (code_variants.py time-dirs, two rounds); then their own tests (CPU and CUDA)
# and gpu_suite.py's memcheck selection under compute-sanitizer, the three ops side by side.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
OPS="layer_norm rms_norm softmax"
for op in $OPS; do
  (cd reference_ops/$op && MAX_JOBS=5 python setup.py build_ext --inplace > "$OUT/build_$op.log" 2>&1; echo "$op build $?") &
done
wait
args=""
for op in $OPS; do args="$args $op=$op:reference_ops/$op"; done
python tests/perf/rowwise/code_variants.py time-dirs $args 2>&1 | grep -v Warn | tee "$OUT/forward.txt"
for op in $OPS; do
  (cd reference_ops/$op && timeout 300 python -m pytest -q -p no:cacheprovider 2>&1 | tail -1 | sed "s/^/$op tests: /") &
done
wait
SEL=$(python -c "import sys; sys.path.insert(0, 'tests'); from gpu_suite import SANITIZED_TESTS; print(SANITIZED_TESTS)")
for op in $OPS; do
  (cd reference_ops/$op && timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 python -m pytest -q -x -p no:cacheprovider -k "$SEL" 2>&1 | tail -2 | tr '\n' ' ' | sed "s/^/$op memcheck: /"; echo) &
done
wait
