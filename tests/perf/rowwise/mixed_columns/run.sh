#!/usr/bin/env bash
# float32 columns with half-type rows (a float32 weight with bfloat16 activations, as autocast
# passes them) on the GPU: the rowwise reference ops and the projects named as arguments
# (rendered beforehand), built for the visible GPU; their whole suites, the new test under
# compute-sanitizer's memcheck, and the rms_norm and layer_norm timings with bfloat16 and with
# float32 columns (tests/perf/rowwise/bench_generated.py, against eager). Logs to $OUT.
#     bash tests/perf/rowwise/mixed_columns/run.sh [PROJECT ...]     # from the repository's root
set -uo pipefail
out="${OUT:-/tmp/mixed_columns}"
root="$(pwd)"
work="$(mktemp -d)"
mkdir -p "$out"
{ date -u; nvidia-smi -L; python -c "import torch; print('torch', torch.__version__)"; } > "$out/summary.txt"
projects="reference_ops/rms_norm reference_ops/layer_norm reference_ops/softmax $*"
for p in $projects; do
  name=$(basename "$p")
  cp -r "$p" "$work/$name"
  (cd "$work/$name" && python -m pip install -v --no-deps --no-build-isolation -e . > "$out/build_$name.txt" 2>&1;
   echo "build $name: exit $?" >> "$out/summary.txt") &
done
wait
echo "built after ${SECONDS}s" >> "$out/summary.txt"
for p in $projects; do
  name=$(basename "$p")
  (cd "$work/$name" && timeout 400 python -m pytest -q -p no:cacheprovider -rs > "$out/full_$name.txt" 2>&1;
   echo "full suite $name: exit $? | $(tail -1 "$out/full_$name.txt")" >> "$out/summary.txt") &
done
wait
for p in $projects; do
  name=$(basename "$p")
  (cd "$work/$name" && timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 python -m pytest -q -p no:cacheprovider -k "float32_columns and cuda" > "$out/memcheck_$name.txt" 2>&1;
   echo "memcheck float32_columns $name: exit $? | $(tail -1 "$out/memcheck_$name.txt")" >> "$out/summary.txt")
done
echo "tested after ${SECONDS}s" >> "$out/summary.txt"
for op in rms_norm layer_norm; do
  for columns in same float32; do
    extra=""; [ "$columns" = float32 ] && extra="--column-dtype float32"
    (cd "$work/$op" && timeout 200 python "$root/tests/perf/rowwise/bench_generated.py" --op "$op" --label "columns_$columns" \
        --out "$out" --skip compile,liger $extra 2>&1 | grep "\[" | sed "s/^/columns=$columns /" >> "$out/summary.txt")
  done
done
echo "done after ${SECONDS}s" >> "$out/summary.txt"
cat "$out/summary.txt"
grep -h -B2 -A25 "^___\|FAILED" "$out"/full_*.txt "$out"/memcheck_*.txt | head -150
