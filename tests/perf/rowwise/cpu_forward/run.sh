#!/usr/bin/env bash
# Renders a project of three rowwise presets (layernorm, softmax, add_rmsnorm), builds it for
# the CPU and runs bench.py in it. Needs opgen, torch, ninja.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
opgen new rw --defaults --kind rowwise --preset layernorm --op ln > /dev/null
cd rw
opgen add sm --defaults --kind rowwise --preset softmax > /dev/null
opgen add arms --defaults --kind rowwise --preset add_rmsnorm > /dev/null
USE_CUDA=0 python -m pip install --no-build-isolation -q -e . > build.log 2>&1 || { tail -30 build.log; exit 1; }
python "$here/bench.py"
