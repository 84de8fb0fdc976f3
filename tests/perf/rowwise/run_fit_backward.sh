#!/usr/bin/env bash
# Device run: softmax's backward on row_kernel_fit (fit_backward_variant.py; RK_FIT_BWD=1), on
# 512 x 4 (RK_PLAN=512,4) and on the ring with a block on every multiprocessor (RK_RING_ALL_SMS=1),
# against the library's kernel (the same build, none of them set) and Liger-Kernel's, timed
# apart by softmax_backward_parts.py. Render first, here: python tests/perf/rowwise/fit_backward_variant.py
# then carry tests/perf/rowwise/build/fitbwd and .whl (Liger-Kernel's wheel).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
D=tests/perf/rowwise/build/fitbwd/softmax
(cd $D && MAX_JOBS=8 python setup.py build_ext --inplace > "$OUT/build_fitbwd.log" 2>&1; echo "build $?")
bash tests/perf/rowwise/kernel_resources.sh $D/softmax/_C*.so | grep "row_kernel_fit<softmax::BackwardSpec"
S=tests/perf/rowwise/softmax_backward_parts.py
for round in ${ROUNDS:-1 2}; do
  echo "== round $round"
  PYTHONPATH=$D:/tmp/site python $S --liger 2>&1 | grep -v "Warn\|warn"
  for v in ${VARIANTS:-all_sms 512x4}; do
    case $v in
      all_sms) LABEL=all_sms RK_RING_ALL_SMS=1 PYTHONPATH=$D python $S 2>&1 | grep -v "Warn\|warn" ;;
      512x4) LABEL=512x4 RK_PLAN=512,4 PYTHONPATH=$D python $S 2>&1 | grep -v "Warn\|warn" ;;
      fit) LABEL=fit RK_FIT_BWD=1 PYTHONPATH=$D python $S 2>&1 | grep -v "Warn\|warn" ;;
    esac
  done
  LABEL=512x4_fit RK_PLAN=512,4 RK_FIT_BWD=1 PYTHONPATH=$D python $S 2>&1 | grep -v "Warn\|warn"
done
echo "== the project's own tests on CUDA, RK_RING_ALL_SMS=1 and RK_PLAN=512,4 RK_FIT_BWD=1"
[ -n "${VARIANTS:-}" ] || (cd $D && RK_RING_ALL_SMS=1 timeout 100 python -m pytest -q -x -k cuda tests 2>&1 | tail -1)
(cd $D && RK_PLAN=512,4 RK_FIT_BWD=1 timeout 100 python -m pytest -q -x -k cuda tests 2>&1 | tail -1)
