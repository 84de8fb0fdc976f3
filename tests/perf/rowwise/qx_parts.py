"""The int8 quantizer's forward taken apart (out_dtype_h200/README.md): the same quantizer
writing bfloat16 (q_bf16), writing int8 without rint (q_trunc), with a division a row
(quant_mul), uint8 (quant_u8), beside a copy; CUDA-event medians of 200 calls, L2 flushed.

    PYTHONPATH=tests/perf/rowwise/build/qx python tests/perf/rowwise/qx_parts.py [--once]

--once: one call of each (for Nsight Compute).
"""

import statistics
import sys

import torch
from qx import q_bf16, q_trunc, quant, quant_mul, quant_u8

OPS = {"quant": quant, "quant_mul": quant_mul, "q_trunc": q_trunc, "q_bf16": q_bf16, "quant_u8": quant_u8}


def median_us(fn, calls=200):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    times = []
    for _ in range(calls):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


for rows, n in [(4096, 4096), (4096, 16384), (32768, 4096)]:
    x = torch.randn(rows, n, device="cuda", dtype=torch.bfloat16)
    if "--once" in sys.argv:
        for name, op in OPS.items():
            print("op", name, rows, n, flush=True)
            op(x)
        torch.cuda.synchronize()
        break
    copied = torch.empty_like(x)
    line = {"copy": median_us(lambda: copied.copy_(x))}
    line |= {name: median_us(lambda op=op: op(x)) for name, op in OPS.items()}
    print(f"{rows}x{n} " + "  ".join(f"{k} {v:.1f}" for k, v in line.items()), flush=True)
