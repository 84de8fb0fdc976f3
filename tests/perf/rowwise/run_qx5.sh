#!/usr/bin/env bash
# Device run 5: an elementwise op with int8 out (to_i8, two inputs: broadcasting and vector
# paths) on CUDA: its generated tests.
set -u
cd "$(dirname "$0")/build/qx"
nvidia-smi --query-gpu=name --format=csv,noheader
python -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1; echo "build exit $?"
python -m pytest -q -p no:cacheprovider tests/test_to_i8.py 2>&1 | tail -2
python -c "
import torch; from qx import to_i8
x = torch.randn(3, 1000, device='cuda'); y = torch.randn(1000, device='cuda')
out = to_i8(x, y); ref = torch.clamp(torch.round(x * 50 + y), -127, 127).to(torch.int8)
print(out.dtype, out.is_cuda, 'max diff', (out.int() - ref.int()).abs().max().item())
" 2>&1 | grep -v "Warning\|cpu = _conv"
