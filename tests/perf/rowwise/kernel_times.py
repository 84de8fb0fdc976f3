"""Where a rowwise forward's time goes: do_bench's time against the kernel's own (CUPTI).

    R=reference_ops; PYTHONPATH=$R/softmax:$R/rms_norm:$R/layer_norm \
        python tests/perf/rowwise/kernel_times.py

Nsight Compute had LayerNorm's bf16 4096 x 4096 kernel within 4% of softmax's (19.3 against
18.5 us, NOTES.md "LayerNorm's forward, taken apart"), where do_bench has it 13% behind (0.84
against 0.95 of a copy, separate runs). Here, in one process, for a device copy and the three
reference ops, at each shape and dtype:

- do_bench: triton's median, L2 cleared (zeroed) before each call, as bench_generated.py;
- ahead: CUDA events around one call, the L2 zeroed before it and the stream held by a
  spin kernel first, so that every launch is queued before the GPU reaches the start event
  (no host time can show);
- kernel: the op's kernels' own durations from the profiler (CUPTI), the zeroing between;
- hot: events around 200 calls in a row, no clearing (the previous call's lines in L2).
"""

from __future__ import annotations

import argparse
import importlib
import statistics

import torch
from torch.profiler import ProfilerActivity, profile
from triton.testing import do_bench

CLEAR = torch.empty(256 << 20, dtype=torch.int8, device="cuda")


def ahead(fn, calls: int = 40) -> float:
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        CLEAR.zero_()
        torch.cuda._sleep(2_000_000)  # ~1 ms: the host queues start, fn and end meanwhile
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def kernel(fn, calls: int = 40) -> tuple[float, str]:
    """The median over calls of the summed durations of the kernels fn launches."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            CLEAR.zero_()
            fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type.name == "CUDA" and "FillFunctor" not in e.name
               and "memset" not in e.name.lower()]
    names = sorted({e.name[:90] for e in kernels})
    per_call = len(kernels) // calls
    durations = [sum(e.device_time for e in kernels[i * per_call:(i + 1) * per_call]) for i in range(calls)]
    return statistics.median(durations), f"{per_call} kernel(s) a call: {'; '.join(names)}"


def hot(fn, calls: int = 200) -> float:
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(20_000_000)  # ~10 ms: the host stays ahead of the GPU
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="+", default=["4096x4096", "4096x16384", "32768x4096"])
    args = parser.parse_args()
    names = ("softmax", "rms_norm", "layer_norm")
    ops = {name: getattr(importlib.import_module(name), name) for name in names}
    print(torch.cuda.get_device_name(), torch.__version__)
    for dtype in (torch.bfloat16, torch.float32):
        for shape in args.shapes:
            rows, n = (int(s) for s in shape.split("x"))
            x = torch.randn(rows, n, device="cuda", dtype=dtype)
            w, b = (1 + 0.5 * torch.randn(n, device="cuda", dtype=dtype) for _ in range(2))
            dst = torch.empty_like(x)
            fns = {
                "copy": lambda: dst.copy_(x),  # noqa: B023
                "softmax": lambda: ops["softmax"](x),  # noqa: B023
                "rms_norm": lambda: ops["rms_norm"](x, w),  # noqa: B023
                "layer_norm": lambda: ops["layer_norm"](x, w, b),  # noqa: B023
            }
            base = {}
            with torch.no_grad():
                for name, fn in fns.items():
                    timings = {"do_bench": do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3,
                               "ahead": ahead(fn)}
                    timings["kernel"], kernels = kernel(fn)
                    timings["hot"] = hot(fn)
                    if name == "copy":
                        base = timings
                    fractions = " ".join(f"{k} {v:6.1f} us ({base[k] / v:.2f})" for k, v in timings.items())
                    print(f"{str(dtype)[6:]:8} {shape:11} {name:10} {fractions} | {kernels}", flush=True)


if __name__ == "__main__":
    main()
