#!/usr/bin/env bash
# The three fuzzers on a GPU machine, in one call (tests/perf/fuzz/README.md):
#
#   (here)   cd tests/perf/fuzz/build && opgen new fz --signature ... (README.md)
#   (device) bash tests/perf/fuzz/run_gpu.sh     # carry tests/perf/fuzz/build
#
# Builds the reference ops each fuzzer imports and the elementwise op fz (rendered here: the
# GPU machine has no copier), then writes each fuzzer's report under $OUT.
set -u
out=${OUT:-/tmp/fuzz}
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader
python -c "import torch; print('torch', torch.__version__)"
for project in reference_ops/{rms_norm,layer_norm,softmax,times_two,vector_add,relu,fused_axpby,gelu,silu_mul,matmul,rgb_to_gray,normalize_volume,embedding_bag} tests/perf/fuzz/build/fz; do
  (log=/tmp/build_$(basename "$project").log
   python -m pip install -q --no-deps --no-build-isolation -e "$project" > "$log" 2>&1 || tail -20 "$log"
   echo "built $project: $?") &
done
wait
fuzz() {  # fuzz NAME COMMAND...: the report of COMMAND in $out/NAME.txt, and its last line
  timeout 280 "${@:2}" > "$out/$1.txt" 2>&1
  echo "$1: exit $?, $(tail -1 "$out/$1.txt")"
}
fuzz fuzz_rows_cuda_15000 python tests/perf/fuzz/fuzz_rows.py --trials 15000 --device cuda --seed 1
fuzz fuzz_reference_ops_cuda python tests/perf/fuzz/fuzz_reference_ops.py --trials 3000 --device cuda --seed 0
# from another directory: there `fz` is the installed package, not the project folder
(cd /tmp && fuzz fuzz_elementwise_cuda python "$OLDPWD/tests/perf/fuzz/fuzz_elementwise.py" cuda)
sanitize() { fuzz "$1" compute-sanitizer --tool memcheck --error-exitcode 9 "${@:2}"; grep "ERROR SUMMARY" "$out/$1.txt"; }
sanitize fuzz_rows_memcheck_200 python tests/perf/fuzz/fuzz_rows.py --trials 200 --device cuda --seed 4
sanitize fuzz_reference_ops_memcheck python tests/perf/fuzz/fuzz_reference_ops.py --trials 150 --device cuda --seed 5
