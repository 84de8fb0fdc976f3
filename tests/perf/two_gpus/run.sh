#!/usr/bin/env bash
# Every reference op on a machine with two GPUs: built for the visible GPUs, then the tests
# that put inputs on cuda:1 while cuda:0 is current (and those of the current stream and of
# CPU against CUDA), then the whole suites of the ops named in FULL. Writes to $OUT (default
# /tmp/two_gpus): one build and test log per op, and summary.txt.
#     bash tests/perf/two_gpus/run.sh          # from the repository's root
set -uo pipefail
out="${OUT:-/tmp/two_gpus}"
work="$(mktemp -d)"
mkdir -p "$out"
full="${FULL:-rms_norm layer_norm softmax embedding_bag fused_axpby_stable}"
{
  date -u
  nvidia-smi -L
  python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'devices', torch.cuda.device_count())"
} > "$out/summary.txt"
ops=$(cd reference_ops && ls -d */ | tr -d /)
for op in $ops; do
  cp -r "reference_ops/$op" "$work/$op"
  (cd "$work/$op" && python -m pip install -v --no-deps --no-build-isolation -e . > "$out/build_$op.txt" 2>&1;
   echo "build $op: exit $?" >> "$out/summary.txt") &
done
wait
echo "built after ${SECONDS}s" >> "$out/summary.txt"
for op in $ops; do
  (cd "$work/$op" && python -m pytest -q -p no:cacheprovider -rA \
     -k "other_than_the_current or current_stream or cpu_and_cuda" > "$out/devices_$op.txt" 2>&1;
   echo "two-GPU tests $op: exit $? | $(grep -c 'PASSED.*other_than_the_current' "$out/devices_$op.txt") passed on cuda:1 | $(tail -1 "$out/devices_$op.txt")" >> "$out/summary.txt") &
done
wait
echo "two-GPU tests done after ${SECONDS}s" >> "$out/summary.txt"
for op in $full; do
  (cd "$work/$op" && timeout 300 python -m pytest -q -p no:cacheprovider -rs > "$out/full_$op.txt" 2>&1;
   echo "full suite $op: exit $? | $(tail -1 "$out/full_$op.txt")" >> "$out/summary.txt") &
done
wait
echo "done after ${SECONDS}s" >> "$out/summary.txt"
cat "$out/summary.txt"
