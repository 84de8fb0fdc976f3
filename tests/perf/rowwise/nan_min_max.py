"""min, max and clamp in formulas keep NaN on the GPU, as torch.minimum, torch.maximum and
torch.clamp do (qx's nanmm: clamp(min(x, y), -1, 1) + max(x, y); quant's clamp), in float32
and bfloat16; each NaN position of the inputs is NaN in the output, and the rest match.

    PYTHONPATH=tests/perf/rowwise/build/qx python tests/perf/rowwise/nan_min_max.py
"""

import torch
from qx import nanmm, q_bf16

for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
    x = torch.randn(1000, device="cuda", dtype=dtype)
    y = torch.randn(1000, device="cuda", dtype=dtype)
    x[::7] = float("nan")
    y[::11] = float("nan")
    y[5] = float("-0.0")
    out = nanmm(x, y)
    expected = (torch.clamp(torch.minimum(x.double(), y.double()), -1, 1) + torch.maximum(x.double(), y.double()))
    assert torch.equal(out.isnan(), expected.isnan()), dtype
    assert torch.allclose(out.double(), expected, equal_nan=True, rtol=1e-2, atol=1e-3), dtype
    print("nanmm", dtype, "NaN where torch has NaN:", int(out.isnan().sum()))
# clamp of a NaN row element in a rowwise formula: q_bf16 (max(abs(x)) ignores a NaN, as
# fmax does; q of that element is NaN).
x = torch.randn(4, 300, device="cuda", dtype=torch.bfloat16)
x[1, 17] = float("nan")
q, scale = q_bf16(x)
assert q[1, 17].isnan() and not q[1].isnan().sum() > 1 and not q[0].isnan().any()
print("q_bf16: NaN in, NaN out at that element only")
