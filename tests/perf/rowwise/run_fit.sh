#!/usr/bin/env bash
# Device run: the rowwise reference ops with row_kernel_fit (reference_ops/<op>) against the
# same ops before it (tests/perf/rowwise/build/old/<op>, carried): both built in place, the new
# ones' own tests (CPU and CUDA), then each forward timed in turn (code_variants.py time-dirs).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
OLD=tests/perf/rowwise/build/old
for op in layer_norm rms_norm softmax; do
  (cd reference_ops/$op && MAX_JOBS=3 python setup.py build_ext --inplace > "$OUT/build_new_$op.log" 2>&1; echo "new $op build $?") &
  (cd $OLD/$op && MAX_JOBS=3 python setup.py build_ext --inplace > "$OUT/build_old_$op.log" 2>&1; echo "old $op build $?") &
done
wait
for op in layer_norm rms_norm softmax; do
  (cd reference_ops/$op && timeout 240 python -m pytest -q -x -p no:cacheprovider -k cuda 2>&1 | tail -2 | sed "s/^/$op tests: /")
done
args=""
for op in layer_norm rms_norm softmax; do args="$args ${op}_old=$op:$OLD/$op ${op}_fit=$op:reference_ops/$op"; done
python tests/perf/rowwise/code_variants.py time-dirs $args 2>&1 | grep -v Warn | tee "$OUT/fit.txt"
