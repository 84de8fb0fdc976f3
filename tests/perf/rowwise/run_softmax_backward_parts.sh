#!/usr/bin/env bash
# Device run: softmax's forward and backward apart, ours (default plan and forced layouts)
# beside Liger-Kernel's (softmax_backward_parts.py). Render first, here:
#   PLANX_BUILD=tests/perf/rowwise/build/planx_b256 PLANX_OPS=softmax PLANX_EXTRA="256,8" \
#     PLANX_MIN_BLOCKS="256,8,2" PLANX_RING=1 python tests/perf/rowwise/plan_variants.py render
# then carry that directory and .whl (Liger-Kernel's wheel) to the GPU machine and run this.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
D=tests/perf/rowwise/build/planx_b256/softmax
(cd $D && MAX_JOBS=8 python setup.py build_ext --inplace > "$OUT/build_softmax.log" 2>&1; echo "build $?")
# registers and stack of the bf16 backward kernels, by layout
bash tests/perf/rowwise/kernel_resources.sh $D/softmax/_C*.so | grep "BackwardSpec.*bfloat16, \(256, 8\|512, 4\|1024, 2\)"
S=tests/perf/rowwise/softmax_backward_parts.py
for round in ${ROUNDS:-1 2}; do
  echo "== round $round"
  PYTHONPATH=$D:/tmp/site python $S --liger 2>&1 | grep -v "Warn\|warn"
  for plan in ${PLANS:-256,8 512,4,2 1024,2 512,8}; do
    RK_PLAN=$plan PYTHONPATH=$D python $S 2>&1 | grep -v "Warn\|warn"
  done
done
