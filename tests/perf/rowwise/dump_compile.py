"""Prints the Triton kernels torch.compile generates for the rowwise forwards where it beats
the reference ops on an H200 (bench_generated.py, 2026-11-27): LayerNorm bf16 4096 x 16384,
RMSNorm and LayerNorm float32 4096 x 4096, RMSNorm bf16 4096 x 16384 (Inductor's default
mode, as bench_generated.py compiles them).

    TORCH_LOGS=output_code python tests/perf/rowwise/dump_compile.py > compile_kernels.txt 2>&1
"""

import torch
import torch.nn.functional as F

CASES = [
    ("layer_norm", torch.bfloat16, 4096, 16384),
    ("rms_norm", torch.float32, 4096, 4096),
    ("layer_norm", torch.float32, 4096, 4096),
    ("rms_norm", torch.bfloat16, 4096, 16384),
]
for op, dtype, rows, n in CASES:
    torch._dynamo.reset()
    x = torch.randn(rows, n, device="cuda", dtype=dtype)
    w = torch.randn(n, device="cuda", dtype=dtype)
    b = torch.randn(n, device="cuda", dtype=dtype)
    if op == "layer_norm":
        fn = torch.compile(lambda x, w, b: F.layer_norm(x, (n,), w, b, 1e-5), dynamic=False)
        print(f"##### {op} {dtype} {rows}x{n}", flush=True)
        fn(x, w, b)
    else:
        fn = torch.compile(lambda x, w: F.rms_norm(x, (n,), w, 1e-6), dynamic=False)
        print(f"##### {op} {dtype} {rows}x{n}", flush=True)
        fn(x, w)
    torch.cuda.synchronize()
