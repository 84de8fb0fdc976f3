#!/usr/bin/env bash
# Device run: the rowwise reference ops built in place with float softmax rows of 16384 on
# row_kernel_fit; softmax's own tests (CPU and CUDA), a copy whose fit kernel is broken on
# purpose (its test of rows that fill a block must fail), the fit tests under memcheck, and
# the forwards timed (code_variants.py time-dirs).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
BROKEN=/tmp/softmax_broken
rm -rf $BROKEN && cp -r reference_ops/softmax $BROKEN
python - <<'PY'
from pathlib import Path
p = Path("/tmp/softmax_broken/csrc/row_kernels.cuh")
s = p.read_text()
old = "\n        for (int e = 0; e < VEC; ++e) of[e] = F::out(k, ctx_at(i, e, z, cv));\n"
assert s.count(old) == 1
p.write_text(s.replace(old, old + "        if (BLOCK == 1024) of[0] *= 2;  // wrong on purpose\n"))
PY
for d in reference_ops/layer_norm reference_ops/rms_norm reference_ops/softmax $BROKEN; do
  (cd $d && MAX_JOBS=4 python setup.py build_ext --inplace > "$OUT/build_$(basename $d).log" 2>&1; echo "$d build $?") &
done
wait
(cd reference_ops/softmax && timeout 300 python -m pytest -q -p no:cacheprovider 2>&1 | tail -2 | sed "s/^/softmax tests: /")
(cd $BROKEN && timeout 120 python -m pytest -q -p no:cacheprovider -k "rows_that_fill and cuda" 2>&1 | tail -3 | sed "s/^/broken fit kernel: /")
for op in softmax layer_norm rms_norm; do
  (cd reference_ops/$op && timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 python -m pytest -q -x -p no:cacheprovider -k "rows_that_fill and cuda" 2>&1 | tail -2 | sed "s/^/$op memcheck: /")
done
python tests/perf/rowwise/code_variants.py time-dirs softmax_fit1024=softmax:reference_ops/softmax 2>&1 | grep -v Warn | tee "$OUT/fit1024.txt"
