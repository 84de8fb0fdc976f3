"""How much of a 4096 x 4096 forward's time is the L2 flush's write-back? triton's do_bench
clears L2 before each timed call by zeroing 256 MB, which leaves L2 full of dirty lines that
the timed kernel then writes back; a flush that reads 256 MB leaves clean lines instead.
Forward medians (µs) of layer_norm, rms_norm and softmax as built in PYTHONPATH, and of a
device copy, both ways (run_flush_regimes.sh)."""

import os

import torch
from layer_norm import layer_norm
from rms_norm import rms_norm
from softmax import softmax


def median_us(fn, flush, reps=50):
    start = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(5):
        fn()
    for i in range(reps):
        flush()
        start[i].record()
        fn()
        end[i].record()
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) for s, e in zip(start, end))[reps // 2] * 1000


cache = torch.zeros(64 << 20, dtype=torch.float32, device="cuda")  # 256 MB
sink = torch.empty((), dtype=torch.float32, device="cuda")
flushes = {
    "zero (dirty L2)": lambda: cache.zero_(),
    "read (clean L2)": lambda: torch.sum(cache, dim=0, out=sink),
}
label = os.environ.get("LABEL", "")
for rows, n in ((4096, 4096), (32768, 4096)):
    for dtype in (torch.bfloat16, torch.float32):
        x = torch.randn(rows, n, device="cuda", dtype=dtype)
        w = torch.randn(n, device="cuda", dtype=dtype)
        b = torch.randn(n, device="cuda", dtype=dtype)
        dst = torch.empty_like(x)
        ops = {"copy": lambda: dst.copy_(x), "layer_norm": lambda: layer_norm(x, w, b),
               "rms_norm": lambda: rms_norm(x, w), "softmax": lambda: softmax(x)}
        for flush_name, flush in flushes.items():
            copy = median_us(ops["copy"], flush)
            cells = "  ".join(f"{name} {median_us(fn, flush):6.1f} ({copy / median_us(fn, flush):.3f})"
                              for name, fn in ops.items() if name != "copy")
            print(f"{label:>12} {str(dtype)[6:]:>8} {rows}x{n} {flush_name}: copy {copy:6.1f}  {cells}",
                  flush=True)
