"""Which parts of the generated row kernels cost the forward its last tenth of a copy's
bandwidth on an H200? (rows_per_thread_probe.cu's plain LayerNorm kernel reached 0.94 of a
copy at 4096^2 and 4096 x 16384 in bf16 where reference_ops/layer_norm's reached 0.81-0.86,
with the same layouts and registers.)

    python tests/perf/rowwise/code_variants.py build   # copies of the reference ops, changed, built
    python tests/perf/rowwise/code_variants.py time    # each copy's forward, in turn, two rounds
    python tests/perf/rowwise/code_variants.py time-dirs LABEL=OP:DIR ...   # built projects, in turn

Copies (in /tmp/rkvar/<op>_<variant>; the changes exist only for this measurement):
  base     as generated
  vec      16-byte access taken as given: load_vec/store_vec without their element-wise path
  div      the means' v / n (an IEEE division with a slow path) written divide(v, n)
  byvec    div, and ops of several stages always take the reduction pass vector by vector
           (not also a copy of it without checks for threads whose vectors are all whole)
  fit      div, and every reduction pass compiled once, without checks (right only for rows
           that fill the row group exactly, as every timed shape does)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
WORK = Path("/tmp/rkvar")
VARIANTS = {
    "layer_norm": ["base", "div", "byvec", "fit"],
    "rms_norm": ["base", "div", "fit"],
    "softmax": ["base", "byvec", "fit"],
}
DISPATCH = "      if ((!SHIFT || colv(0) >= lo) && whole(colv(VPT - 1)))\n        pass(std::false_type{});"


def patch(op: str, name: str, csrc: Path) -> None:
    rk = csrc / "row_kernels.cuh"
    kernel = csrc / f"{op}_kernel.cu"
    s, k = rk.read_text(), kernel.read_text()
    if name == "vec":
        assert s.count("  if (vec_ok) {") == 3
        s = s.replace("  if (vec_ok) {", "  if (true) {")
    if name in ("div", "byvec", "fit"):
        k = k.replace("return v / e.n;", "return divide(v, e.n);")
    assert DISPATCH in s
    if name == "byvec":
        s = s.replace(DISPATCH, "      if (F::kStages < 2 && (!SHIFT || colv(0) >= lo) && whole(colv(VPT - 1)))\n"
                      "        pass(std::false_type{});")
    if name == "fit":
        s = s.replace(DISPATCH, "      if (true)\n        pass(std::false_type{});")
    rk.write_text(s)
    kernel.write_text(k)


def copies(variants: dict[str, list[str]] = VARIANTS, work: Path = WORK):
    for op, names in variants.items():
        for name in names:
            yield op, name, work / f"{op}_{name}"


def build(patch_copy=patch, variants: dict[str, list[str]] = VARIANTS, work: Path = WORK,
          max_jobs: str = "3") -> None:
    """Copies of the reference ops, each changed by patch_copy(op, variant, its csrc/), built
    in place side by side."""
    procs = []
    for op, name, dst in copies(variants, work):
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(ROOT / "reference_ops" / op, dst)
        patch_copy(op, name, dst / "csrc")
        log = open(work / f"build_{op}_{name}.log", "w")
        procs.append((dst.name, subprocess.Popen(
            [sys.executable, "setup.py", "build_ext", "--inplace"], cwd=dst,
            env=dict(os.environ, MAX_JOBS=max_jobs), stdout=log, stderr=subprocess.STDOUT)))
    for label, p in procs:
        print(label, "build", p.wait(), flush=True)


TIMER = r"""
import sys, torch, torch.nn.functional as F
from triton.testing import do_bench
op, path, label = sys.argv[1:4]
sys.path.insert(0, path)
mod = __import__(op)
assert mod.__file__.startswith(path)
fn = getattr(mod, op)
for dtype in (torch.bfloat16, torch.float32):
    for rows, n in ((4096, 4096), (32768, 4096), (4096, 16384)):
        x = torch.randn(rows, n, device="cuda", dtype=dtype)
        w = torch.rand(n, device="cuda", dtype=dtype) + 0.5
        b = torch.randn(n, device="cuda", dtype=dtype)
        if op == "layer_norm":
            call = lambda: fn(x, w, b, 1e-5)
            ref = F.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)
        elif op == "rms_norm":
            call = lambda: fn(x, w, 1e-6)
            ref = F.rms_norm(x.double(), (n,), w.double(), 1e-6)
        else:
            call = lambda: fn(x)
            ref = torch.softmax(x.double(), -1)
        err = ((call().double() - ref).norm() / ref.norm()).item()
        out = torch.empty_like(x)
        copy = do_bench(lambda: out.copy_(x), warmup=25, rep=200, return_mode="median")
        ours = do_bench(call, warmup=25, rep=200, return_mode="median")
        print(f"{label:18s} {str(dtype)[6:]:9s} {rows:6d}x{n:<6d} {ours*1e3:7.1f} us  copy {copy*1e3:7.1f} us"
              f"  {copy/ours:.3f} of copy  err {err:.1e}", flush=True)
"""


def time_all(variants: dict[str, list[str]] = VARIANTS, work: Path = WORK) -> None:
    for round_ in (1, 2):
        print(f"# round {round_}", flush=True)
        for op, _, dst in copies(variants, work):
            subprocess.run([sys.executable, "-c", TIMER, op, str(dst), dst.name], check=False)


def main(patch_copy, variants: dict[str, list[str]], work: Path, max_jobs: str = "2") -> None:
    """`build` or `time` (sys.argv[1]) the copies of a variants script beside this one."""
    work.mkdir(exist_ok=True)
    if sys.argv[1] == "build":
        build(patch_copy, variants, work, max_jobs)
    else:
        time_all(variants, work)


def time_dirs(specs: list[str]) -> None:
    """Built projects named LABEL=OP:DIR, timed in turn, two rounds."""
    runs = [(label, *rest.split(":", 1)) for label, rest in (s.split("=", 1) for s in specs)]
    for round_ in (1, 2):
        print(f"# round {round_}", flush=True)
        for label, op, path in runs:
            subprocess.run([sys.executable, "-c", TIMER, op, str(Path(path).resolve()), label], check=False)


if __name__ == "__main__":
    WORK.mkdir(exist_ok=True)
    if sys.argv[1] == "time-dirs":
        time_dirs(sys.argv[2:])
    else:
        {"build": build, "time": time_all}[sys.argv[1]]()
