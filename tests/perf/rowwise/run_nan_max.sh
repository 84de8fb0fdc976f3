#!/usr/bin/env bash
# Device run: rowwise max and min reductions that keep a NaN (torch.amax's way) instead of
# leaving it out (fmaxf's). Call 1 (`checks`): builds an ops project of three ops with max and
# min reductions (tests/perf/rowwise/build/nan_ops, rendered as NOTES.md says) and runs its
# CUDA tests, the NaN test also under compute-sanitizer; the GPU suite of the three rowwise
# reference ops. Call 2 (`bench`): softmax's forward and forward + backward, the reference op
# as it is against the one of the commit before (tests/perf/rowwise/build/nan_before, from
# `git archive`), in turn, two rounds, with bench_generated.py (do_bench medians); and the
# nan_ops project again with the row kernels of the commit before (fmaxf), whose CUDA NaN tests
# must fail.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
B=tests/perf/rowwise/build
if [ "${1:-checks}" = checks ]; then
  (cd $B/nan_ops && MAX_JOBS=6 python setup.py build_ext --inplace > "$OUT/build_nan_ops.log" 2>&1; echo "nan_ops build $?")
  echo "== nan_ops tests (CUDA)"
  (cd $B/nan_ops && python -m pytest -q -p no:cacheprovider tests -k cuda 2>&1 | tail -4)
  echo "== the NaN tests under memcheck"
  (cd $B/nan_ops && compute-sanitizer --tool memcheck --print-limit 4 python -m pytest -q -p no:cacheprovider tests \
     -k "nan_in_a_row and cuda" 2>&1 | grep -v "Host Frame\|^=========  *$" | tail -4)
  python tests/gpu_suite.py --no-bench --ops softmax layer_norm rms_norm --out "$OUT/suite" 2>&1 | tail -8
else
  (cd $B/nan_before/reference_ops/softmax && MAX_JOBS=8 python setup.py build_ext --inplace > "$OUT/build_before.log" 2>&1; echo "before build $?") &
  (cd reference_ops/softmax && MAX_JOBS=8 python setup.py build_ext --inplace > "$OUT/build_after.log" 2>&1; echo "after build $?") &
  rm -rf $B/nan_ops_fmax && cp -r $B/nan_ops $B/nan_ops_fmax && rm -rf $B/nan_ops_fmax/build $B/nan_ops_fmax/nan_ops/_C*.so
  cp $B/nan_before/reference_ops/softmax/csrc/row_kernels.cuh $B/nan_ops_fmax/csrc/
  (cd $B/nan_ops_fmax && MAX_JOBS=8 python setup.py build_ext --inplace > "$OUT/build_fmax.log" 2>&1; echo "fmax build $?") &
  wait
  echo "== nan_ops with fmaxf: the CUDA NaN tests"
  (cd $B/nan_ops_fmax && python -m pytest -q -p no:cacheprovider tests -k "nan_in_a_row and cuda" 2>&1 | tail -2)
  for round in 1 2; do
    for label in before after; do
      dir=reference_ops/softmax
      [ $label = before ] && dir=$B/nan_before/reference_ops/softmax
      [ $round = 1 ] && PYTHONPATH=$dir python -c "import softmax._C as c; print('$label:', c.__file__)"
      PYTHONPATH=$dir python tests/perf/rowwise/bench_generated.py --op softmax --skip compile,liger \
        --label "${label}_$round" --out "$OUT" 2>&1 | grep "^\[softmax"
    done
  done
fi
