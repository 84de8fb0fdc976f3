"""Where a generated rowwise op's backward spends its time: the kernels of one call, by name.

    python tests/perf/rowwise/profile_backward.py --op rms_norm --shape 8x131072 --dtype bf16

The installed reference op's `<op>_backward`, called directly (no autograd) after a
warm-up, under torch.profiler: each CUDA kernel's time (median over 20 calls), then
do_bench's median of the whole call (L2 cleared) beside the same op's forward.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_generated import EPS, inputs  # noqa: E402
from bench_rowwise import bench  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--op", default="rms_norm", choices=["softmax", "rms_norm", "layer_norm"])
    parser.add_argument("--shape", default="8x131072")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    args = parser.parse_args()
    rows, n = (int(v) for v in args.shape.split("x"))
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    importlib.import_module(args.op)
    ops = getattr(torch.ops, args.op)
    tensors = inputs(args.op, rows, n, dtype)
    grad = torch.randn_like(tensors[0])
    scalars = [EPS[args.op]] if args.op in EPS else []
    forward = getattr(ops, args.op)
    saved = [forward(*tensors, *scalars)] if args.op == "softmax" else tensors  # what autograd saves
    backward = getattr(ops, f"{args.op}_backward")

    def call():
        return backward(grad, *saved, *scalars)

    for _ in range(5):
        call()
    torch.cuda.synchronize()
    times = defaultdict(list)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            call()
        torch.cuda.synchronize()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name].append(event.device_time)
    calls = len(next(iter(times.values())))
    print(f"{args.op} {args.dtype} {rows}x{n}: backward kernels, median us over {calls} calls")
    for name, values in sorted(times.items(), key=lambda item: -statistics.median(item[1])):
        print(f"  {statistics.median(values):8.1f}  x{len(values) // 20}  {name[:150]}")
    whole = bench(call)
    alone = bench(lambda: forward(*tensors, *scalars))
    print(f"  backward (do_bench) {whole:.1f} us, forward {alone:.1f} us")


if __name__ == "__main__":
    main()
