#!/usr/bin/env bash
# Rowwise ops captured in CUDA graphs and run on a side stream: the three rowwise reference
# ops and the projects named as arguments (rendered beforehand), built for the visible GPU;
# their captured-graph and current-stream tests, then their whole suites. Logs to $OUT.
#     bash tests/perf/graphs/run.sh [PROJECT ...]     # from the repository's root
set -uo pipefail
out="${OUT:-/tmp/graphs}"
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
  (cd "$work/$name" && python -m pytest -q -p no:cacheprovider -rA -k "captured or current_stream" > "$out/graphs_$name.txt" 2>&1;
   echo "graph and stream tests $name: exit $? | $(tail -1 "$out/graphs_$name.txt")" >> "$out/summary.txt") &
done
wait
for p in $*; do
  name=$(basename "$p")
  (cd "$work/$name" && timeout 300 python -m pytest -q -p no:cacheprovider -rs > "$out/full_$name.txt" 2>&1;
   echo "full suite $name: exit $? | $(tail -1 "$out/full_$name.txt")" >> "$out/summary.txt")
done
echo "done after ${SECONDS}s" >> "$out/summary.txt"
cat "$out/summary.txt"
grep -h -B2 -A25 "^___\|Error\|FAILED" "$out"/graphs_*.txt | head -150
