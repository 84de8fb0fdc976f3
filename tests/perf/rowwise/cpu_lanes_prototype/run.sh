#!/usr/bin/env bash
# The CPU prototype of NOTES.md ("The CPU path"): a project with the layernorm and softmax
# presets, built CPU-only with the two prototype files beside its own, then timed.
#     bash tests/perf/rowwise/cpu_lanes_prototype/run.sh     # from the repository's root
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
cd "$work"
opgen new pr --op mix --signature "x: Tensor, y: Tensor" --forward "x * y + 1" \
  --gradients "x: y * grad; y: x * grad" --dtypes float32,bfloat16,float16 > /dev/null
opgen add ln -p pr --kind rowwise --preset layernorm > /dev/null
opgen add sm -p pr --kind rowwise --preset softmax > /dev/null
cp "$here/proto_cpu_avx2.cpp" "$here/proto.cpp" pr/csrc/
cd pr && USE_CUDA=0 python -m pip install -q --no-build-isolation -e . && python "$here/proto_bench.py"
