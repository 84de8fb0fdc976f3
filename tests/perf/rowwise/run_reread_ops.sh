#!/usr/bin/env bash
# Device run: ops that take the re-reading kernel besides rms_norm, rendered into
# tests/perf/rowwise/build/rrops (an L2 normalization with no column inputs and a per-row
# output, an int8 absmax quantizer: see the render commands in NOTES.md), built and tested
# on CUDA, and under memcheck (WITH_RMS_NORM=1: rms_norm's row-length tests on CUDA too).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
D=tests/perf/rowwise/build/rrops
(cd $D && MAX_JOBS=16 python setup.py build_ext --inplace > "$OUT/build_rrops.log" 2>&1; echo "rrops build $?") &
[ -n "${WITH_RMS_NORM:-}" ] && (cd reference_ops/rms_norm && MAX_JOBS=8 python setup.py build_ext --inplace > "$OUT/build_rms_norm.log" 2>&1; echo "rms_norm build $?") &
wait
(cd $D && python -m pytest -q -p no:cacheprovider -k "cuda and not compile" tests 2>&1 | tail -4)
[ -n "${WITH_RMS_NORM:-}" ] && (cd reference_ops/rms_norm && python -m pytest -q -p no:cacheprovider -k "cuda and (lengths_around or rows_that_fill)" tests 2>&1 | tail -3)
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
(cd $D && $SANITIZER --tool memcheck --error-exitcode 9 python -m pytest -q -x -p no:cacheprovider \
  -k "cuda and (lengths_around or rows_that_fill or storage_offset)" tests > "$OUT/memcheck.log" 2>&1
 echo "memcheck exit $?"; tail -3 "$OUT/memcheck.log")
