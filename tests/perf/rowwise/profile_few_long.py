"""Kernel by kernel: where fwd+bwd of few long rows goes (ours, variants, torch.compile).

    python tests/perf/rowwise/profile_few_long.py [--variant NAME=path/to/NS.so] [--no-compile]

Each implementation's fwd+bwd (autograd.grad, as bench_rowwise.py times it) replayed as a
CUDA graph 50 times under torch.profiler; prints each kernel's mean duration a replay, and
the replay's wall time (do_bench median) beside the kernels' sum: the difference is the
gaps between kernels.
"""
import argparse
import collections
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_rowwise as br  # noqa: E402
import build_ext  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--variant", action="append", default=[])
ap.add_argument("--shapes", default="8x131072")
ap.add_argument("--ops", default="rms,ln,softmax")
ap.add_argument("--dtypes", default="bf16,f32")
ap.add_argument("--no-compile", action="store_true")
a = ap.parse_args()
build_ext.load()
variants = build_ext.load_variants(a.variant)
REPS = 50
for dn in a.dtypes.split(","):
    dtype = torch.bfloat16 if dn == "bf16" else torch.float32
    for shape in a.shapes.split(","):
        rows, N = (int(v) for v in shape.split("x"))
        for op in a.ops.split(","):
            x, w, b = br.make_inputs(op, rows, N, dtype)
            g = torch.randn_like(x)
            impls = {"ours": br.ours(op)}
            for name, ns in variants:
                impls[name] = br.ours(op, ns)
            if not a.no_compile:
                impls["compile"] = torch.compile(br.eager(op), dynamic=False)
            for name, f in impls.items():
                params = [t.detach().requires_grad_(True) for t in (x, w, b) if t is not None]
                wp = params[1] if w is not None else None
                bp = params[2] if b is not None else None

                def fb(f=f, params=params, wp=wp, bp=bp, g=g):
                    return torch.autograd.grad(f(params[0], wp, bp), params, g)

                replay, keep = br.graphed(fb)
                wall = br.bench(replay)
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                    for _ in range(REPS):
                        replay()
                    torch.cuda.synchronize()
                per = collections.OrderedDict()
                for ev in prof.events():
                    if ev.device_type == torch.autograd.DeviceType.CUDA and ev.device_time > 0:
                        per.setdefault(ev.name, []).append(ev.device_time)
                total = sum(sum(v) for v in per.values()) / REPS
                print(f"{op} {dn} {rows}x{N} {name}: replay {wall:.1f} us, kernels {total:.1f} us")
                for k, v in per.items():
                    print(f"    {sum(v) / REPS:7.2f} us  x{len(v) / REPS:.0f}  {k[:110]}")
                del keep
