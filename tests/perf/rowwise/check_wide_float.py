"""The float32 rows of LayerNorm- and RMSNorm-like forwards that run in 512-thread blocks
compiled for two blocks a multiprocessor: 8 vectors a thread at 8193-16384 columns, 4 at
4097-8192 (rk_wide_float, rk_min_blocks). Outputs against torch's at shapes around the rules,
aligned and not, then the forward's time as a fraction of a device copy's bandwidth.

    PYTHONPATH=reference_ops/layer_norm:reference_ops/rms_norm \
        python tests/perf/rowwise/check_wide_float.py [--no-bench]
"""

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from layer_norm import layer_norm
from rms_norm import rms_norm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rowwise import bench  # noqa: E402

torch.manual_seed(0)
shapes = [(300, 16384), (300, 10000), (300, 9999), (300, 8193), (4096, 16384), (300, 8192), (300, 16385),
          (300, 4097), (300, 4100), (300, 5000), (300, 6144), (4096, 8192), (300, 4096)]
for rows, n in shapes:
    x = torch.randn(rows, n, device="cuda") * 3 + 1
    w = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    for name, ours, ref in (
        ("layer_norm", lambda: layer_norm(x, w, b), lambda: F.layer_norm(x, (n,), w, b, 1e-5)),
        ("rms_norm", lambda: rms_norm(x, w), lambda: F.rms_norm(x, (n,), w, 1e-6)),
    ):
        torch.testing.assert_close(ours(), ref(), rtol=1e-4, atol=1e-4)
        view = x[:, 1:]  # a row view that starts off 16 bytes (element by element)
        if name == "layer_norm":
            got, want = layer_norm(view, w[1:], b[1:]), F.layer_norm(view, (n - 1,), w[1:], b[1:], 1e-5)
        else:
            got, want = rms_norm(view, w[1:]), F.rms_norm(view, (n - 1,), w[1:], 1e-6)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    print(f"{rows}x{n} float32: layer_norm and rms_norm match torch (also as an unaligned view)")
if "--no-bench" in sys.argv:
    sys.exit()
print(torch.cuda.get_device_name(), torch.__version__)
for rows, n in ((4096, 16384), (4096, 12288), (4096, 8192), (16384, 8192), (4096, 6144), (8192, 5120)):
    x = torch.randn(rows, n, device="cuda")
    w = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    dst = torch.empty_like(x)
    copy = bench(lambda: dst.copy_(x))
    for name, fn in (("layer_norm", lambda: layer_norm(x, w, b)), ("rms_norm", lambda: rms_norm(x, w))):
        fn()
        t = bench(fn)
        print(f"{name:>10} float32 {rows}x{n}: fwd {t:7.1f} us, copy {copy:7.1f} us, {copy / t:.3f} of copy")
