"""Correctness and speed of the row kernels (row_kernels.cuh) against eager PyTorch,
torch.compile, Liger-Kernel and a device copy, on a CUDA GPU.

    python tests/perf/rowwise/bench_rowwise.py [--out DIR] [--skip compile,liger]
                                               [--ops rms,ln,softmax] [--no-check] [--no-time]
                                               [--variant NAME=path/to/NS.so ...]

--variant times another build of the row kernels beside "ours" (build_ext.py --ns NS
--library FILE --build-dir DIR builds one, e.g. the last commit's library as a baseline).

Correctness: forward outputs and gradients (dx, dweight, dbias) against float64
references on random inputs (odd N, unaligned views, zero rows, > 2^31 elements).
Speed: medians of triton.testing.do_bench (it clears the L2 before every run, so the
inputs come from DRAM). Forward is reported as the fraction of a device-to-device copy's
bandwidth (copy of a tensor of the op's size: it reads and writes what the op does);
forward+backward in microseconds. Writes results.json and a log under --out.
"""
import argparse
import datetime
import json
import math
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_ext  # noqa: E402

CHECK_NS = "rowk_bench"  # the build the correctness checks run on (--check-variant: others too)


# ---------------------------------------------------------------- autograd wrappers
# `ns` names the op namespace of a build (torch.ops.<ns>): rowk_bench, or a --variant's.
class _Rms(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, eps, ns):
        ctx.ob = getattr(torch.ops, ns)
        y, rstd = ctx.ob.rms_fwd(x, w, eps)
        ctx.save_for_backward(x, w, rstd)
        return y

    @staticmethod
    def backward(ctx, g):
        x, w, rstd = ctx.saved_tensors
        dx, dw = ctx.ob.rms_bwd(g.contiguous(), x, w, rstd)
        return dx, dw, None, None


class _Ln(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, eps, ns):
        ctx.ob = getattr(torch.ops, ns)
        y, mean, rstd = ctx.ob.ln_fwd(x, w, b, eps)
        ctx.save_for_backward(x, w, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, g):
        x, w, mean, rstd = ctx.saved_tensors
        dx, dw, db = ctx.ob.ln_bwd(g.contiguous(), x, w, mean, rstd)
        return dx, dw, db, None, None


class _Smax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, log, ns):
        ctx.ob = getattr(torch.ops, ns)
        y = (ctx.ob.log_softmax_fwd if log else ctx.ob.softmax_fwd)(x)
        ctx.save_for_backward(y)
        ctx.log = log
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        f = ctx.ob.log_softmax_bwd if ctx.log else ctx.ob.softmax_bwd
        return f(g.contiguous(), y), None, None


EPS = 1e-6


def ours(op, ns="rowk_bench"):
    if op == "rms":
        return lambda x, w, b: _Rms.apply(x, w, EPS, ns)
    if op == "ln":
        return lambda x, w, b: _Ln.apply(x, w, b, EPS, ns)
    if op == "softmax":
        return lambda x, w, b: _Smax.apply(x, False, ns)
    if op == "log_softmax":
        return lambda x, w, b: _Smax.apply(x, True, ns)
    raise ValueError(op)


def ours_fwd_only(op, ns="rowk_bench"):
    ob = getattr(torch.ops, ns)
    if op == "rms":
        return lambda x, w, b: ob.rms_fwd(x, w, EPS)[0]
    if op == "ln":
        return lambda x, w, b: ob.ln_fwd(x, w, b, EPS)[0]
    if op == "softmax":
        return lambda x, w, b: ob.softmax_fwd(x)
    return lambda x, w, b: ob.log_softmax_fwd(x)


def eager(op):
    if op == "rms":
        return lambda x, w, b: F.rms_norm(x, (x.shape[-1],), w, EPS)
    if op == "ln":
        return lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, EPS)
    if op == "softmax":
        return lambda x, w, b: torch.softmax(x, -1)
    return lambda x, w, b: torch.log_softmax(x, -1)


def liger(op):
    from liger_kernel.transformers import functional as LF
    if op == "rms":
        return lambda x, w, b: LF.liger_rms_norm(x, w, EPS)
    if op == "ln":
        return lambda x, w, b: LF.liger_layer_norm(x, w, b, EPS)
    if op == "softmax":
        return lambda x, w, b: LF.liger_softmax(x)
    raise ValueError("no liger log_softmax")


def reference(op, x, w, b):
    """float64 reference (on the GPU)."""
    x64 = x.double()
    w64 = None if w is None else w.double()
    b64 = None if b is None else b.double()
    return eager(op)(x64, w64, b64)


# ---------------------------------------------------------------- correctness
def rel(a, b):
    a = a.double()
    b = b.double()
    if a.numel() == 0:
        return 0.0
    # an infinity where the reference has the same one (a masked log-softmax's -inf) is exact
    same_inf = torch.isinf(b) & (a == b)
    a = torch.where(same_inf, 0.0, a)
    b = torch.where(same_inf, 0.0, b)
    if not torch.isfinite(a).all():
        return float("inf")
    # relative to the reference, with a floor for references that are ~0 everywhere
    # (rms_norm's dx at N=1 is eps/(x^2+eps) of its terms: pure cancellation)
    den = max(b.norm().item(), 1e-3 * math.sqrt(b.numel()))
    return (a - b).norm().item() / den


def poison():
    # Fill freed allocator blocks with NaN so that an unwritten output shows up.
    t = torch.full((1 << 27,), float("nan"), device="cuda")
    del t


def make_inputs(op, rows, N, dtype, unaligned=False, scale=1.0, masked=False):
    dev = "cuda"
    if unaligned:
        base = torch.randn(rows * N + 1, device=dev, dtype=dtype)
        x = base[1:].view(rows, N)
    else:
        x = torch.randn(rows, N, device=dev, dtype=dtype)
    x = x * scale if scale != 1.0 else x
    if masked:
        # -inf past a point in each row (an attention mask): long stretches of -inf, whole
        # threads' and blocks' parts of a row among them; column 0 always kept
        keep = (torch.arange(rows, device=dev) * 7919) % N
        x = x.masked_fill(torch.arange(N, device=dev)[None, :] > keep[:, None], float("-inf"))
    w = (1 + 0.5 * torch.randn(N, device=dev, dtype=dtype)) if op in ("rms", "ln") else None
    b = (0.5 * torch.randn(N, device=dev, dtype=dtype)) if op == "ln" else None
    return x, w, b


def check_one(op, rows, N, dtype, unaligned=False, log=print, masked=False):
    x, w, b = make_inputs(op, rows, N, dtype, unaligned, scale=3.0 if "softmax" in op else 1.0,
                          masked=masked)
    g = torch.randn(rows, N, device="cuda", dtype=dtype)
    params = [t for t in (x, w, b) if t is not None]
    for t in params:
        t.requires_grad_(True)
    poison()
    y = ours(op, CHECK_NS)(x, w, b)
    grads = torch.autograd.grad(y, params, g, allow_unused=False)
    # reference
    ref_in = [t.detach().double().requires_grad_(True) for t in params]
    rx = ref_in[0]
    rw = ref_in[1] if w is not None else None
    rb = ref_in[2] if b is not None else None
    ry = eager(op)(rx, rw, rb)
    rgrads = torch.autograd.grad(ry, ref_in, g.double())
    tol = {torch.float64: 1e-10, torch.float32: 2e-5}.get(dtype, 1.5e-2)
    errs = {"y": rel(y.detach(), ry.detach())}
    names = ["dx", "dw", "db"]
    for i, (a, r) in enumerate(zip(grads, rgrads)):
        if N == 1 and i == 0 and op in ("rms", "ln"):
            # degenerate: dx is rstd (= 1/sqrt(eps) = 1000) times the rounding residue of
            # w*g - mean(w*g); the float64 reference is ~0, so no relative error exists
            continue
        errs[names[i]] = rel(a, r)
    ok = all(e <= tol for e in errs.values())
    log(f"  check {op:12s} {str(dtype):15s} {rows:>7d}x{N:<7d}"
        f"{' unaligned' if unaligned else ' masked' if masked else '':10s} "
        + " ".join(f"{k}={v:.1e}" for k, v in errs.items()) + ("  ok" if ok else "  FAIL"))
    return ok


def check_big(log=print):
    """rms_norm forward and dx past 2^31 elements (bf16): checks the last rows."""
    N = 4096
    rows = (1 << 31) // N + 3
    x = torch.randn(rows, N, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(rows, N, device="cuda", dtype=torch.bfloat16)
    y, rstd = getattr(torch.ops, CHECK_NS).rms_fwd(x, w, EPS)
    dx, dw = getattr(torch.ops, CHECK_NS).rms_bwd(g, x, w, rstd)
    tail = slice(rows - 5, rows)
    xt = x[tail].double().requires_grad_(True)
    yt = F.rms_norm(xt, (N,), w.double(), EPS)
    (dxt,) = torch.autograd.grad(yt, [xt], g[tail].double())
    e1, e2 = rel(y[tail], yt.detach()), rel(dx[tail], dxt)
    ok = e1 < 1.5e-2 and e2 < 1.5e-2 and torch.isfinite(dw).all().item()
    log(f"  check rms bf16 {rows}x{N} ({rows * N} elements > 2^31): y tail {e1:.1e} dx tail {e2:.1e}"
        + ("  ok" if ok else "  FAIL"))
    del x, g, y, dx, rstd
    torch.cuda.empty_cache()
    return ok


def safe_check(*args, **kw):
    """check_one, with an exception reported as a failure instead of ending the run."""
    try:
        return check_one(*args, **kw)
    except Exception as e:  # noqa: BLE001
        kw.get("log", print)(f"  check {args[:4]} {kw}: error {type(e).__name__}: {str(e)[:300]}  FAIL")
        return False


def run_checks(log):
    ok = True
    shapes = [(1, 1), (5, 7), (3, 8), (33, 300), (64, 1024), (16, 4099), (9, 4096), (7, 16384),
              (300, 2048), (4, 131072), (2, 65536 + 8), (1, 600000), (0, 4096), (3, 0),
              # more row groups than resident blocks (persistent grids, the prefetch ring)
              (40001, 256), (5003, 4096), (2051, 16384),
              # few long rows (the split kernels): column outputs over 8-row batches, and over
              # several row groups summed by the finalize kernel (a partial last batch too)
              (8, 131072), (64, 16384), (33, 20000), (66, 8192),
              # N not a multiple of the vector: rows read shifted to their 16-byte boundary
              # (warp, block and cluster kernels; a persistent ring never runs them)
              (257, 4097), (301, 1023), (64, 16383), (300, 50257), (5000, 300),
              # many rows that would each need a cluster of 4+ blocks: the streaming kernel
              (200, 32768), (300, 50304),
              # column gradients of up to a row (float) or six rows (half types) a
              # multiprocessor: the split kernels
              (100, 8192), (500, 16384)]
    for op in ("rms", "ln", "softmax", "log_softmax"):
        for dtype in (torch.float32, torch.bfloat16, torch.float64):
            for rows, N in shapes:
                ok &= safe_check(op, rows, N, dtype, log=log)
            ok &= safe_check(op, 37, 4096, dtype, unaligned=True, log=log)
            ok &= safe_check(op, 5, 131072, dtype, unaligned=True, log=log)
            ok &= safe_check(op, 5003, 4096, dtype, unaligned=True, log=log)
        ok &= safe_check(op, 129, 4096, torch.float16, log=log)
    # rows of softmax and log-softmax that are -inf past a point (an attention mask)
    for op in ("softmax", "log_softmax"):
        for dtype in (torch.float32, torch.bfloat16, torch.float64):
            for rows, N in ((64, 1024), (9, 4096), (5003, 4096), (7, 16384), (2051, 16384),
                            (33, 20000), (300, 50257), (200, 32768), (4, 131072)):
                ok &= safe_check(op, rows, N, dtype, log=log, masked=True)
    # float64 statistics are float64 (the accumulation type), float32 for the others
    xd = torch.randn(4, 256, device="cuda", dtype=torch.float64)
    wd = torch.randn(256, device="cuda", dtype=torch.float64)
    _, rstd_d = getattr(torch.ops, CHECK_NS).rms_fwd(xd, wd, EPS)
    _, rstd_b = getattr(torch.ops, CHECK_NS).rms_fwd(xd.bfloat16(), wd.bfloat16(), EPS)
    st_ok = rstd_d.dtype == torch.float64 and rstd_b.dtype == torch.float32
    log(f"  check stat dtypes: float64 -> {rstd_d.dtype}, bfloat16 -> {rstd_b.dtype}" + ("  ok" if st_ok else "  FAIL"))
    ok &= st_ok
    # determinism of the weight gradient
    for rows, N in ((4096, 4096), (8, 131072), (64, 16384)):
        x, w, _ = make_inputs("rms", rows, N, torch.bfloat16)
        g = torch.randn_like(x)
        _, rstd = getattr(torch.ops, CHECK_NS).rms_fwd(x, w, EPS)
        d1 = getattr(torch.ops, CHECK_NS).rms_bwd(g, x, w, rstd)[1]
        d2 = getattr(torch.ops, CHECK_NS).rms_bwd(g, x, w, rstd)[1]
        same = torch.equal(d1, d2)
        log(f"  check dweight bitwise identical across runs, {rows}x{N}: {same}")
        ok &= same
    try:
        ok &= check_big(log)
    except Exception as e:  # noqa: BLE001
        log(f"  check big: error {e!r}")
        ok = False
    return ok


# ---------------------------------------------------------------- timing
def bench(fn, warmup=5, rep=30):
    from triton.testing import do_bench
    return do_bench(fn, warmup=warmup, rep=rep, return_mode="median") * 1000.0  # us


def graphed(fn):
    """fn captured in a CUDA graph (after warm-up on a side stream); returns replay.

    Forward+backward through autograd costs 50-100 us of host time per call, more than
    the GPU work at most shapes here; replaying a graph times the GPU work alone, for
    every implementation alike."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g.replay, g


def time_all(ops, shapes, dtypes, skip, log, results, out_path, variants=()):
    for dtype in dtypes:
        for rows, N in shapes:
            dn = "bf16" if dtype == torch.bfloat16 else "f32"
            x0 = torch.randn(rows, N, device="cuda", dtype=dtype)
            src = torch.empty_like(x0).copy_(x0)
            dst = torch.empty_like(x0)
            t_copy = bench(lambda: dst.copy_(src))
            results[f"copy/{dn}/{rows}x{N}"] = t_copy
            del src, dst
            for op in ops:
                x, w, b = make_inputs(op, rows, N, dtype)
                g = torch.randn_like(x)
                impls = {"ours": ours(op)}
                for vname, vns in variants:
                    impls[vname] = ours(op, vns)
                impls["eager"] = eager(op)
                if "compile" not in skip:
                    impls["compile"] = torch.compile(eager(op), dynamic=False)
                if "liger" not in skip and op != "log_softmax":
                    try:
                        impls["liger"] = liger(op)
                    except Exception as e:  # noqa: BLE001
                        log(f"  liger import fails: {e!r}")
                        impls["liger"] = None
                for name, f in impls.items():
                    key = f"{op}/{dn}/{rows}x{N}/{name}"
                    if f is None:
                        results[key + "/fwd"] = "fails"
                        results[key + "/fwdbwd"] = "fails"
                        continue
                    t0 = time.time()
                    vns = dict(variants).get(name, "rowk_bench" if name == "ours" else None)
                    ffwd = ours_fwd_only(op, vns) if vns else f
                    try:
                        with torch.no_grad():
                            tf = bench(lambda: ffwd(x, w, b))
                        results[key + "/fwd"] = tf
                    except Exception as e:  # noqa: BLE001
                        results[key + "/fwd"] = "fails"
                        log(f"  {key} fwd fails: {type(e).__name__}: {str(e)[:200]}")
                    try:
                        params = [t.detach().requires_grad_(True) for t in (x, w, b) if t is not None]
                        xp = params[0]
                        wp = params[1] if w is not None else None
                        bp = params[2] if b is not None else None

                        def fb():
                            y = f(xp, wp, bp)
                            return torch.autograd.grad(y, params, g)

                        tb_plain = bench(fb)
                        results[key + "/fwdbwd_plain"] = tb_plain
                        try:
                            replay, _keep = graphed(fb)
                            tb = bench(replay)
                            del _keep
                        except Exception as e:  # noqa: BLE001
                            log(f"  {key} graph capture fails ({type(e).__name__}: {str(e)[:120]}); plain timing")
                            tb = tb_plain
                            results[key + "/fwdbwd_graph_fails"] = True
                        results[key + "/fwdbwd"] = tb
                    except Exception as e:  # noqa: BLE001
                        results[key + "/fwdbwd"] = "fails"
                        log(f"  {key} fwd+bwd fails: {type(e).__name__}: {str(e)[:200]}")
                    fw = results.get(key + "/fwd")
                    fwb = results.get(key + "/fwdbwd")
                    frac = (t_copy / fw) if isinstance(fw, float) else None
                    log(f"  {key:40s} fwd {fmt(fw)} us ({'-' if frac is None else f'{frac:.2f}'} of copy "
                        f"{t_copy:.1f} us)  fwd+bwd {fmt(fwb)} us (graph; plain "
                        f"{fmt(results.get(key + '/fwdbwd_plain')).strip()})  [{time.time() - t0:.1f}s]")
                    with open(out_path, "w") as fh:
                        json.dump(results, fh, indent=1)
                del x, w, b, g
                torch._dynamo.reset()


def fmt(v):
    return f"{v:8.1f}" if isinstance(v, float) else f"{str(v):>8s}"


def table(results, ops, shapes, dtypes, skip, variants=()):
    impls = ["ours"] + [v for v, _ in variants] + ["eager"] + [i for i in ("compile", "liger") if i not in skip]
    lines = []
    for op in ops:
        for dtype in dtypes:
            dn = "bf16" if dtype == torch.bfloat16 else "f32"
            lines.append(f"{op} {dn}: fwd fraction of copy bandwidth | fwd+bwd us, graph replay   ("
                         + " / ".join(impls) + ")")
            for rows, N in shapes:
                tc = results.get(f"copy/{dn}/{rows}x{N}")
                fr, fb = [], []
                for i in impls:
                    v = results.get(f"{op}/{dn}/{rows}x{N}/{i}/fwd")
                    fr.append(f"{tc / v:.2f}" if isinstance(v, float) and tc else "fails" if v == "fails" else "-")
                    v = results.get(f"{op}/{dn}/{rows}x{N}/{i}/fwdbwd")
                    fb.append(f"{v:.1f}" if isinstance(v, float) else "fails" if v == "fails" else "-")
                us = results.get(f"{op}/{dn}/{rows}x{N}/ours/fwd")
                lines.append(f"  {rows:>6d}x{N:<7d} fwd {' / '.join(fr):30s} (ours "
                             f"{fmt(us).strip()} us, copy {tc:.1f} us) | fwd+bwd {' / '.join(fb)}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--skip", default="")
    ap.add_argument("--ops", default="rms,ln,softmax")
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--shapes", default="4096x4096,32768x4096,4096x16384,8x131072")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--check-last", action="store_true", help="time first, check after")
    ap.add_argument("--check-variant", default="",
                    help="comma-separated --variant names whose builds get the correctness checks too")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=path/to/NS.so: another build (torch.ops.NS) timed beside ours")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    logf = open(os.path.join(a.out, "bench_log.txt"), "a")

    def log(s):
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    how = build_ext.load()
    props = torch.cuda.get_device_properties(0)
    log(f"# {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}, CUDA {torch.version.cuda}, "
        f"{datetime.date.today()}, extension {how}")
    skip = set(s for s in a.skip.split(",") if s)
    variants = build_ext.load_variants(a.variant)
    for (vname, ns), spec in zip(variants, a.variant, strict=True):
        log(f"# variant {vname}: torch.ops.{ns} from {spec.split('=', 1)[1]}")
    if "liger" not in skip:
        try:
            import liger_kernel  # noqa: F401
        except Exception as e:  # noqa: BLE001
            log(f"liger fails to import: {e!r}")
    ok = True

    def checks():
        global CHECK_NS
        t0 = time.time()
        ok = True
        for vname, ns in [("ours", "rowk_bench")] + [v for v in variants if v[0] in a.check_variant.split(",")]:
            CHECK_NS = ns
            log(f"# correctness of {vname} (torch.ops.{ns})")
            ok &= run_checks(log)
        log(f"# correctness: {'all ok' if ok else 'FAILURES'} ({time.time() - t0:.0f}s)")
        return ok

    if not a.no_check and not a.check_last:
        ok = checks()
    if not a.no_time:
        ops = a.ops.split(",")
        shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
        dtypes = [torch.bfloat16 if d == "bf16" else torch.float32 for d in a.dtypes.split(",")]
        results = {}
        out_path = os.path.join(a.out, "results.json")
        try:
            time_all(ops, shapes, dtypes, skip, log, results, out_path, variants)
        except Exception:  # noqa: BLE001
            log(traceback.format_exc())
        log("")
        log(table(results, ops, shapes, dtypes, skip, variants))
    if not a.no_check and a.check_last:
        ok = checks()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
