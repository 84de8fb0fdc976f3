#!/usr/bin/env bash
# Device run: flush_regimes.py for the library (build/planx_base) and the looped kernel at
# 128 x 4 and 256 x 2 (build/planx_loop, RK_STREAM), as run_looped.sh renders and builds them.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
B=tests/perf/rowwise/build
for b in planx_base planx_loop; do
  ls $B/$b/layer_norm/layer_norm/*.so > /dev/null 2>&1 || \
    PLANX_BUILDS="$B/$b" python tests/perf/rowwise/plan_variants.py build --out "$OUT"
done
P=tests/perf/rowwise/flush_regimes.py
PP() { echo "$B/$1/layer_norm:$B/$1/rms_norm:$B/$1/softmax"; }
PYTHONPATH=$(PP planx_base) LABEL=library python $P
PYTHONPATH=$(PP planx_loop) LABEL=looped128x4 RK_STREAM=128,4 python $P
PYTHONPATH=$(PP planx_loop) LABEL=looped256x2 RK_STREAM=256,2 python $P
