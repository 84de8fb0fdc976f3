#!/usr/bin/env bash
# Issue 12's formula goal on a GPU machine, in one call: the tanh GELU (reference_ops/gelu),
# SwiGLU's product (reference_ops/silu_mul) and the erf GELU written as a formula
# (tests/perf/cpu_call/build/my_gelu, rendered here as erf_gelu.py's docstring says: the GPU
# machine has no copier), each project's own benchmark at 2^28 elements, float32 and
# bfloat16, two rounds in turn; op against eager, torch.compile and a copy, forward and
# forward + backward.
#
#   (device) bash tests/perf/formula_speed/run_gpu.sh     # carry tests/perf/cpu_call/build
set -u
out=${OUT:-/tmp/formula_speed}
mkdir -p "$out"
here=$(pwd)
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/machine.txt"
python -c "import torch; print('torch', torch.__version__)" | tee -a "$out/machine.txt"
date -u +%F | tee -a "$out/machine.txt"
projects="reference_ops/gelu reference_ops/silu_mul tests/perf/cpu_call/build/my_gelu"
for project in $projects; do
  (python -m pip install -q --no-deps --no-build-isolation -e "$project" > "/tmp/build_$(basename "$project").log" 2>&1
   echo "built $project: $?") &
done
wait
for round in 1 2; do
  for project in $projects; do
    name=$(basename "$project")
    for dtype in float32 bfloat16; do
      (cd /tmp && timeout 150 python "$here/$project/benchmarks/bench_$name.py" --dtype "$dtype" --log2 28) \
        2>&1 | grep -v Warning >> "$out/bench_round$round.txt"
    done
  done
done
cat "$out"/bench_round*.txt | grep -E "on cuda|2\^28"
