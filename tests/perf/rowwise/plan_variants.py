"""Which (threads a row, vectors a thread) layout is fastest for a rowwise forward? An
experiment, not the product: reference_ops/{layer_norm,rms_norm,softmax} copied into
tests/perf/rowwise/build/planx/ with a plan override in csrc/row_kernels.cuh (RK_PLAN=
"tpr,vpt" forces that Block or Warp layout where it holds the row), each layout timed in its
own process (plans are cached per shape).

    python tests/perf/rowwise/plan_variants.py render          # here
    python tests/perf/rowwise/plan_variants.py run --out $OUT  # on the GPU machine

PLANX_OPS, PLANX_DTYPES, PLANX_SHAPES ("4096x4096,8192x3072"), PLANX_PLANS ("256,2 128,4"),
PLANX_ROUNDS and PLANX_NO_BUILD (reuse the last build) narrow a run; PLANX_BUILD another
directory to render into and run; PLANX_BUILDS several rendered directories to build at once
and time in turn, round by round ("build" builds them only).

At render: PLANX_EXTRA ("512,8") compiles layouts the library does not have; PLANX_MIN_BLOCKS
("512,8,2") layouts for a minimum of blocks a multiprocessor; PLANX_FLOAT_OPAQUE=1 float
elements extracted anew in every pass; PLANX_RING=1 the prefetch ring in every block-a-row
kernel (not only 1024-thread ones; =colgrad only in those with column outputs), a plan
"tpr,vpt,stages" then running that layout on a persistent grid through a ring of that many
slots; PLANX_STREAM=1 a plan "sBLOCK,U" ("s256,2")
running the looped kernel (a block a row, the row read again for each stage, U vectors a
thread a step) of that layout, PLANX_STREAM_EXTRA ("512,2") compiling layouts of it the
library does not have (both on the library of e4f2764, below); PLANX_STREAM_NOW="256,2 128,4"
the library's own streaming kernel (row_kernel_stream, the looped kernel since 2026-11-27)
compiled at those layouts too, a plan "sBLOCK,U" then running it so on rows without column
outputs; PLANX_EVICT_FIRST=ld the register-held kernels' row loads with an L2
evict_first policy (read once, so that they leave L2 first), =ldst their output stores too;
PLANX_SMEM_ACC=1 the column gradients of 2-byte 512 x 4 backwards accumulated in shared memory;
PLANX_FLOAT_SMEM_ACC=1 those of float 1024 x 4 backwards too, RK_PLAN then forcing backwards only.

Forward medians of triton's do_bench (L2 cleared) as a fraction of a device copy's bandwidth
timed in the same process; with PLANX_BACKWARD=1, forward + backward medians instead (a CUDA
graph replayed, as bench_rowwise.py times them; the gradients checked against torch's). With
PLANX_COMPILE=1, torch.compile's beside the planner's own plan, either way.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUILD = Path(os.environ.get("PLANX_BUILD", HERE / "build" / "planx"))
OPS = ("layer_norm", "rms_norm", "softmax")
SHAPES = [(4096, 4096), (32768, 4096), (4096, 16384)]
PLANS = {4096: ["", "256,2", "256,4", "512,2"], 16384: ["", "1024,2", "1024,4"]}  # "": the planner's own
if os.environ.get("PLANX_SHAPES"):  # e.g. "4096x4096,8192x3072" with PLANX_PLANS "256,2 128,4"
    SHAPES = [tuple(int(v) for v in s.split("x")) for s in os.environ["PLANX_SHAPES"].split(",")]
    PLANS = {n: [""] + os.environ.get("PLANX_PLANS", "").split() for _, n in SHAPES}
OPS = tuple(os.environ.get("PLANX_OPS", " ".join(OPS)).split())
DTYPES = os.environ.get("PLANX_DTYPES", "bfloat16 float32").split()

OVERRIDE = """
  int forced_ring = 0;  // RK_PLAN's third number: ring slots
  if (const char* forced = std::getenv("RK_PLAN")) {  // experiment: tests/perf/rowwise/plan_variants.py
    int a = 0, b = 0;
    const bool read = std::sscanf(forced, "%d,%d,%d", &a, &b, &forced_ring) >= 2;
    const int64_t slots = (int64_t)a * b;
    if (read && slots >= nvec && slots < 2 * nvec &&
        rk_kernel_for<F, T>(a, b, false)) {
      pl.strategy = a == 32 ? Strategy::Warp : Strategy::Block;
      pl.tpr = a;
      pl.vpt = b;
      pl.block = a == 32 ? 128 : a;
      pl.cluster = 1;
      chosen = true;
    }
  }
  if (!chosen) {
    pl.strategy = Strategy::Stream;"""


def with_plan_override(text: str) -> str:
    """row_kernels.cuh with the RK_PLAN override in its planner, and the layouts of
    PLANX_EXTRA ("512,8 128,8": threads and vectors a thread) compiled beside the library's."""
    anchor = "\n  if (!chosen) {\n    pl.strategy = Strategy::Stream;"
    assert text.count(anchor) == 1
    includes = "#include <map>\n#include <cstdio>\n#include <cstdlib>"
    text = text.replace(anchor, OVERRIDE).replace("#include <map>", includes)
    last_variant = "RK_V(512, 4, 512, true);"
    assert text.count(last_variant) == 1
    layouts = [plan.split(",") for plan in os.environ.get("PLANX_EXTRA", "").split()]
    # a warp a row: four rows a 128-thread block
    extra = " ".join(f"RK_V({t}, {v}, {128 if t == '32' else t}, false);" for t, v in layouts)
    text = text.replace(last_variant, f"{last_variant} {extra}")
    if extra:  # the library compiles 8 vectors a thread for some float rows only: every spec here
        gate = "if constexpr (VPT == 8 && !rk_wide_float<F, T>())"
        assert text.count(gate) == 1
        text = text.replace(gate, "if constexpr (false)")
    text = with_min_blocks(text, os.environ.get("PLANX_MIN_BLOCKS", ""))
    if os.environ.get("PLANX_RING"):
        text = with_ring(text, os.environ["PLANX_RING"])
    if os.environ.get("PLANX_STREAM"):
        text = with_stream(text)
    if os.environ.get("PLANX_STREAM_NOW"):
        text = with_stream_layouts(text, os.environ["PLANX_STREAM_NOW"])
    if os.environ.get("PLANX_EVICT_FIRST"):
        text = with_evict_first(text, os.environ["PLANX_EVICT_FIRST"])
    if os.environ.get("PLANX_SMEM_ACC"):
        text = with_smem_accumulators(text)
    if os.environ.get("PLANX_FLOAT_SMEM_ACC"):
        text = with_float_smem_accumulators(text)
    return with_float_opaque(text) if os.environ.get("PLANX_FLOAT_OPAQUE") else text


FLOAT_GET = """  RK_DEV static float get(const uint4& u, int e, uint32_t) {
    const uint32_t w = e == 0 ? u.x : (e == 1 ? u.y : (e == 2 ? u.z : u.w));
    return __uint_as_float(w);"""


def with_float_opaque(text: str) -> str:
    """row_kernels.cuh whose float elements, like the 16-bit ones, are extracted with each
    pass's opaque zero: what a pass computes from them (softmax's exp(x - m), LayerNorm's
    x - mu) can no longer be kept from the pass before in registers."""
    assert text.count(FLOAT_GET) == 1
    return text.replace(FLOAT_GET, FLOAT_GET.replace("uint32_t) {", "uint32_t z) {").replace(
        "__uint_as_float(w)", "__uint_as_float(w ^ z)"))


RING_KERNELS = "constexpr bool kRing = BLOCK == 1024 && !CLUSTER && !SHIFT;"
RING_PLAN = "pl.strategy == Strategy::Block && pl.block == 1024 && per_sm == 1 && cc_major >= 8 &&"
RING_DEPTHS = "for (int s = 2; s <= 4; ++s) {\n"


def with_ring(text: str, which: str) -> str:
    """row_kernels.cuh whose block-a-row kernels of every size compile the prefetch ring
    (which "1"; "colgrad": only kernels with column outputs, the backwards of the norms), and
    whose planner gives a plan "tpr,vpt,stages" a persistent grid through a ring of `stages`
    slots (where there are more rows than resident blocks)."""
    for anchor in (RING_KERNELS, RING_PLAN, RING_DEPTHS):
        assert text.count(anchor) == 1, anchor
    kernels, forced = "TPR == BLOCK", "forced_ring > 1"
    if which == "colgrad":
        kernels = "(BLOCK == 1024 || (TPR == BLOCK && F::kColGrad > 0))"
        forced = "(forced_ring > 1 && F::kColGrad > 0)"
    text = text.replace(RING_KERNELS, RING_KERNELS.replace("BLOCK == 1024", kernels))
    text = text.replace(RING_PLAN, RING_PLAN.replace(
        "pl.block == 1024 && per_sm == 1", f"({forced} || (pl.block == 1024 && per_sm == 1))"))
    only_forced = "        if (forced_ring > 1 && s != forced_ring) continue;\n"
    return text.replace(RING_DEPTHS, RING_DEPTHS + only_forced)


STORE_EVICT_FIRST = """
// Experiment (plan_variants.py, PLANX_EVICT_FIRST=ldst): a 16-byte store with an L2
// evict_first policy (the library's rk_l2_policy).
RK_DEV void rk_store16_evict_first(void* dst, uint4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
               ::"l"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(rk_l2_policy(true)) : "memory");
#else
  *static_cast<uint4*>(dst) = v;
#endif
}
"""
STORE_VEC_COMMENT = "\n// Stores the VEC outputs"


STREAM_KERNELS = "    if (block == 512 && u == 1) return (void*)row_kernel_stream<F, T, 512, 1>;\n"
STREAM_OVERRIDE = """
  if (const char* forced = std::getenv("RK_STREAM")) {  // experiment: plan_variants.py
    int blk = 0, u = 1;
    if (std::sscanf(forced, "%d,%d", &blk, &u) >= 1 && rk_stream_kernel<F, T>(blk, u)) {
      pl.strategy = Strategy::Stream;
      pl.tpr = pl.block = blk;
      pl.vpt = u;
      pl.cluster = 1;
    }
  }
  // Grid. Without column outputs:"""


def with_looped_kernel(text: str) -> str:
    """row_kernels.cuh with looped_kernel.patch applied: its streaming kernel replaced by the
    looped kernel (row_kernel_stream<F, T, BLOCK, U>: the row read again for each stage, U
    vectors a thread a step, L2 hints), compiled at 128 x 4, 256 x 2 and 512 x 1 for forwards
    and 1024 x 1 for every spec (rk_stream_kernel). The patch is against the library of
    commit e4f2764, before the looped kernel went into it at 1024 x 2: render from a checkout
    of that commit."""
    with tempfile.TemporaryDirectory() as tmp:
        lib = Path(tmp) / "row_kernels.cuh"
        lib.write_text(text)
        subprocess.run(["patch", "-s", "-p1", "-d", tmp, "-i", str(HERE / "looped_kernel.patch")],
                       check=True)
        return lib.read_text()


def with_stream(text: str) -> str:
    """row_kernels.cuh with the looped kernel (with_looped_kernel), whose planner runs it with
    BLOCK threads and U vectors a thread a step where RK_STREAM="BLOCK,U" asks (a plan
    "sBLOCK,U"), the layouts of PLANX_STREAM_EXTRA ("512,2 1024,2") compiled beside those.
    (Until 2026-11-27 the plan "sBLOCK,HINT" ran the library's own streaming kernel at BLOCK
    threads, with L2 hints or not: stream_h200.txt.)"""
    text = with_looped_kernel(text)
    grid = "\n  // Grid. Without column outputs:"
    for anchor in (STREAM_KERNELS, grid):
        assert text.count(anchor) == 1, anchor
    extra = "".join(
        f"    if (block == {b} && u == {u}) return (void*)row_kernel_stream<F, T, {b}, {u}>;\n"
        for b, u in (layout.split(",") for layout in os.environ.get("PLANX_STREAM_EXTRA", "").split())
    )
    return text.replace(STREAM_KERNELS, STREAM_KERNELS + extra).replace(grid, STREAM_OVERRIDE)


STREAM_LAUNCH = """    row_kernel_stream<F, T, kStreamBlock, kStreamVectors>
        <<<(unsigned)pl.grid, kStreamBlock, 0, stream>>>(p);
"""
STREAM_NOW_OVERRIDE = """
  if (const char* forced = std::getenv("RK_STREAM")) {  // experiment: plan_variants.py
    int blk = 0, u = 0;
    if (F::kColGrad == 0 && std::sscanf(forced, "%d,%d", &blk, &u) == 2 && (LAYOUTS)) {
      pl.strategy = Strategy::Stream;
      pl.tpr = pl.block = blk;
      pl.vpt = u;
      pl.cluster = 1;
    }
  }
  // Grid. Without column outputs:"""


def with_stream_layouts(text: str, layouts: str) -> str:
    """row_kernels.cuh of today whose streaming kernel (row_kernel_stream<F, T, BLOCK, U>, the
    looped kernel) is compiled at the layouts of `layouts` ("256,2 128,4": threads, vectors a
    thread a step) beside the library's 1024 x 2, and whose planner runs it so on rows without
    column outputs where RK_STREAM="BLOCK,U" asks (a plan "sBLOCK,U")."""
    grid = "\n  // Grid. Without column outputs:"
    for anchor in (STREAM_LAUNCH, grid):
        assert text.count(anchor) == 1, anchor
    pairs = [tuple(int(v) for v in layout.split(",")) for layout in layouts.split()]
    known = " || ".join(f"(blk == {b} && u == {u})" for b, u in pairs)
    text = text.replace(grid, STREAM_NOW_OVERRIDE.replace("LAYOUTS", known))
    launch = "".join(
        f"    if (pl.block == {b} && pl.vpt == {u})\n"
        f"      row_kernel_stream<F, T, {b}, {u}><<<(unsigned)pl.grid, {b}, 0, stream>>>(p);\n"
        f"    else\n" for b, u in pairs
    ) + STREAM_LAUNCH
    return text.replace(STREAM_LAUNCH, launch)


ROW_LOAD = "xraw[xi][i] = row_ok ? load_vec<T>(rp, colv(i), N, p.vec_ok)"
ROW_STORE = "if (col < N) *reinterpret_cast<uint4*>(row + col) = TI::pack(f);"


def with_evict_first(text: str, what: str) -> str:
    """row_kernels.cuh whose register-held kernels load rows ("ld"), and store outputs too
    ("ldst"), with an L2 evict_first policy (the library's rk_l2_policy and rk_load16_l2)."""
    for anchor in (ROW_LOAD, ROW_STORE, STORE_VEC_COMMENT):
        assert text.count(anchor) == 1, anchor
    evict_first_load = ("(p.vec_ok && colv(i) < N ? rk_load16_l2(rp + colv(i), rk_l2_policy(true))"
                        " : load_vec<T>(rp, colv(i), N, p.vec_ok))")
    text = text.replace(ROW_LOAD, ROW_LOAD.replace("load_vec<T>(rp, colv(i), N, p.vec_ok)", evict_first_load))
    if what == "ldst":
        text = text.replace(STORE_VEC_COMMENT, STORE_EVICT_FIRST + STORE_VEC_COMMENT)
        text = text.replace(ROW_STORE, "if (col < N) rk_store16_evict_first(row + col, TI::pack(f));")
    return text


RK_MIN_BLOCKS = "constexpr int rk_min_blocks() {\n"


def with_min_blocks(text: str, layouts: str) -> str:
    """row_kernels.cuh whose kernels of the layouts in `layouts` ("512,8,2": threads, vectors
    a thread, blocks a multiprocessor) are compiled for that many blocks a multiprocessor
    (forwards and backwards alike), through the library's rk_min_blocks."""
    assert text.count(RK_MIN_BLOCKS) == 1
    rules = "".join(
        f"  if (TPR == {tpr} && VPT == {vpt} && !CLUSTER) return {blocks};\n"
        for tpr, vpt, blocks in (layout.split(",") for layout in layouts.split())
    )
    return text.replace(RK_MIN_BLOCKS, RK_MIN_BLOCKS + rules)


SMEM_ACC_DECL = "  A acc[F::kColGrad > 0 ? F::kColGrad : 1][VPT][VEC];\n"
SMEM_ACC_OCCUPANCY = "cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, pl.block, 0);"
SMEM_ACC_LAUNCH = "cfg.dynamicSmemBytes = p.stages > 1 ? pl.smem_bytes : 0;"


def with_smem_accumulators(text: str) -> str:
    """row_kernels.cuh whose 2-byte backward kernels of 512 threads x 4 vectors (rows of 16384,
    one block a multiprocessor, 128 registers and 416-496 bytes spilled) keep their column
    gradients' accumulators in dynamic shared memory ([k][vector][element][thread]: each
    thread its own words, no bank conflicts) instead of registers. The experiment that led to
    rk_col_acc_smem; it applies to the library before it (c3ee04d), not to the one after."""
    for anchor in (SMEM_ACC_DECL, SMEM_ACC_OCCUPANCY, SMEM_ACC_LAUNCH):
        assert text.count(anchor) == 1, anchor
    decl = """  constexpr bool kSmemAcc =
      F::kColGrad > 0 && sizeof(T) == 2 && BLOCK == 512 && VPT == 4 && !CLUSTER;
  A acc[F::kColGrad > 0 && !kSmemAcc ? F::kColGrad : 1][kSmemAcc ? 1 : VPT][kSmemAcc ? 1 : VEC];
  extern __shared__ uint4 rk_acc_smem[];
  auto accr = [&](int k, int i, int e) -> A& {
    if constexpr (kSmemAcc)
      return reinterpret_cast<A*>(rk_acc_smem)[((k * VPT + i) * VEC + e) * BLOCK + tid];
    else
      return acc[k][i][e];
  };
"""
    text = text.replace(SMEM_ACC_DECL, decl)
    text = re.sub(r"(?<!return )acc\[k\]\[i\]\[([^\]]+)\]", r"accr(k, i, \1)", text)
    plan = """if (F::kColGrad > 0 && sizeof(T) == 2 && pl.strategy == Strategy::Block && pl.block == 512 &&
        pl.vpt == 4) {
      pl.smem_bytes = (size_t)F::kColGrad * 4 * TypeInfo<T>::kVec * 512 * sizeof(acc_t<T>);
      if (!rk_allow_dynamic_smem(k, pl.smem_bytes)) {
        pl.status = cudaErrorInvalidConfiguration;
        return pl;
      }
    }
    const cudaError_t e =
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, pl.block, pl.smem_bytes);"""
    text = text.replace("const cudaError_t e = " + SMEM_ACC_OCCUPANCY, plan)
    launch = """if (pl.stages <= 1 && pl.smem_bytes > 0 && !rk_allow_dynamic_smem(k, pl.smem_bytes))
      return cudaErrorInvalidConfiguration;
    cfg.dynamicSmemBytes = p.stages > 1 || pl.stages <= 1 ? pl.smem_bytes : 0;"""
    return text.replace(SMEM_ACC_LAUNCH, launch)


COL_ACC_SMEM = ("return sizeof(T) == 2 && F::kColGrad >= 2 && TPR == 512 && VPT == 4 && BLOCK == 512 && "
                "!CLUSTER;")
FORCED_PLAN = "if (read && slots >= nvec && slots < 2 * nvec &&"


def with_float_smem_accumulators(text: str) -> str:
    """row_kernels.cuh whose float backwards of 1024 threads x 4 vectors (rows of 16384; the
    planner gives column outputs at most 512 threads, and at 1024 the 64-register cap spills)
    keep their column accumulators in shared memory too (rk_col_acc_smem), and whose RK_PLAN
    forces a plan on kernels with column outputs only (the backwards; forwards as planned).
    The experiment behind the planner's float 1024 x 4 rule; it applies to the library of
    fa99231, before that rule."""
    for anchor in (COL_ACC_SMEM, FORCED_PLAN):
        assert text.count(anchor) == 1, anchor
    text = text.replace(COL_ACC_SMEM, COL_ACC_SMEM.replace(
        "return ", "return (sizeof(T) == 4 && F::kColGrad >= 1 && TPR == 1024 && VPT == 4 && BLOCK == 1024 &&"
        " !CLUSTER) || "))
    forced = """if (read && F::kColGrad > 0 && slots >= nvec && slots < 2 * nvec &&"""
    text = text.replace(FORCED_PLAN, forced)
    chosen = "      pl.cluster = 1;\n      chosen = true;\n    }\n  }"
    assert text.count(chosen) == 1
    acc = """      pl.cluster = 1;
      pl.acc_smem_bytes = 0;
      if (rk_col_acc_smem<F, T, 1024, 4, 1024, false>() && a == 1024 && b == 4) {
        pl.acc_smem_bytes = rk_col_acc_smem_bytes<F, T>(4, 1024);
        if (!rk_allow_dynamic_smem(rk_kernel_for<F, T>(1024, 4, false), pl.acc_smem_bytes, device))
          std::fprintf(stderr, "RK_PLAN: no shared memory for the accumulators\\n");
      }
      chosen = true;
    }
  }"""
    return text.replace(chosen, acc)


def copy_op(op: str, dst: Path, patch) -> None:
    """reference_ops/<op> copied to dst without build outputs, its csrc/row_kernels.cuh
    passed through patch(text)."""
    shutil.copytree(
        ROOT / "reference_ops" / op, dst, ignore=shutil.ignore_patterns("build", "*.so", "__pycache__")
    )
    lib = dst / "csrc" / "row_kernels.cuh"
    lib.write_text(patch(lib.read_text()))


def build_in_place(dirs: list[Path], out: Path, max_jobs: str) -> None:
    """`setup.py build_ext --inplace` in each directory at once, each logged into out as
    build_<parent>_<name>.log (build_base_layer_norm.log)."""
    jobs = []
    for path in dirs:
        log = open(out / f"build_{path.parent.name}_{path.name}.log", "w")
        jobs.append(
            subprocess.Popen(
                [sys.executable, "setup.py", "build_ext", "--inplace"],
                cwd=path,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(os.environ, MAX_JOBS=max_jobs),
            )
        )
    for job in jobs:
        job.wait()


def render() -> None:
    shutil.rmtree(BUILD, ignore_errors=True)
    for op in OPS:
        copy_op(op, BUILD / op, with_plan_override)
    print("rendered into", BUILD)


def call(op, x, w, b):
    if op == "layer_norm":
        from layer_norm import layer_norm

        return lambda: layer_norm(x, w, b)
    if op == "rms_norm":
        from rms_norm import rms_norm

        return lambda: rms_norm(x, w)
    from softmax import softmax

    return lambda: softmax(x)


def reference(op, x, w, b):
    """torch's answer for op, computed in float32."""
    import torch.nn.functional as F

    x, w, b = x.float(), w.float(), b.float()
    if op == "layer_norm":
        return F.layer_norm(x, x.shape[-1:], w, b)
    if op == "rms_norm":
        return F.rms_norm(x, x.shape[-1:], w, eps=1e-6)
    return x.softmax(-1)


def forward_and_copy(op: str, dtype, rows: int, n: int, compiled: bool = False) -> tuple[float, float, bool]:
    """µs of op's forward on random rows x n inputs of dtype (with `compiled`, torch.compile's
    of the eager op instead, as bench_generated.py compiles it), and of a copy of the rows, and
    whether the forward matches torch's (within the dtype's rounding)."""
    import torch

    sys.path.insert(0, str(HERE))
    from bench_rowwise import bench

    x = torch.randn(rows, n, device="cuda", dtype=dtype)
    w = torch.randn(n, device="cuda", dtype=dtype)
    b = torch.randn(n, device="cuda", dtype=dtype)
    dst = torch.empty_like(x)
    copy = bench(lambda: dst.copy_(x))
    if compiled:
        c = torch.compile(eager(op), dynamic=False)
        fn = lambda: c(x, w, b)  # noqa: E731
    else:
        fn = call(op, x, w, b)
    want = reference(op, x, w, b)
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    ok = bool(torch.allclose(fn().float(), want, rtol=tol, atol=tol))
    return bench(fn), copy, ok


def eager(op):
    import torch.nn.functional as F

    if op == "layer_norm":
        return lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b)
    if op == "rms_norm":
        return lambda x, w, b: F.rms_norm(x, x.shape[-1:], w, eps=1e-6)
    return lambda x, w, b: x.softmax(-1)


def forward_backward(op: str, dtype, rows: int, n: int) -> tuple[float, float | None, bool]:
    """µs of op's forward + backward (a CUDA graph replayed), of torch.compile's for the
    planner's own plan with PLANX_COMPILE (else None), and whether the gradients match torch's."""
    import torch

    sys.path.insert(0, str(HERE))
    from bench_rowwise import bench, graphed

    torch.manual_seed(0)
    x = torch.randn(rows, n, device="cuda", dtype=dtype, requires_grad=True)
    w = torch.randn(n, device="cuda", dtype=dtype, requires_grad=True)
    b = torch.randn(n, device="cuda", dtype=dtype, requires_grad=True)
    g = torch.randn(rows, n, device="cuda", dtype=dtype)
    params = [x, w, b] if op == "layer_norm" else ([x, w] if op == "rms_norm" else [x])
    fn = call(op, x, w, b)
    got = torch.autograd.grad(fn(), params, g)
    ref = [t.detach().float().requires_grad_(True) for t in (x, w, b)]
    want = torch.autograd.grad(reference(op, *ref), ref[: len(params)], g.float())
    tol = 1e-2 if dtype == torch.bfloat16 else 1e-4  # relative error of each gradient
    ok = all(float((a.float() - e).norm() / e.norm().clamp_min(1e-30)) < tol for a, e in zip(got, want))
    replay, _keep = graphed(lambda: torch.autograd.grad(fn(), params, g))
    ours = bench(replay)
    compiled = None
    if not os.environ.get("PLANX_PLAN") and os.environ.get("PLANX_COMPILE"):
        c = torch.compile(eager(op), dynamic=False)
        creplay, _ckeep = graphed(lambda: torch.autograd.grad(c(x, w, b), params, g))
        compiled = bench(creplay)
    return ours, compiled, ok


def time_one(op: str) -> None:
    import torch

    plan = os.environ.get("PLANX_PLAN", "")
    for dtype in [getattr(torch, d) for d in DTYPES]:
        for rows, n in SHAPES:
            if plan not in PLANS[n]:
                continue
            if os.environ.get("PLANX_BACKWARD"):
                both, compiled, ok = forward_backward(op, dtype, rows, n)
                print(
                    f"{op:>10} {str(dtype)[6:]:>8} {rows:>6}x{n:<6} plan {plan or 'default':>8} "
                    f"fwd+bwd {both:7.1f} us" + ("" if compiled is None else f" compile {compiled:7.1f} us")
                    + ("" if ok else "  WRONG"),
                    flush=True,
                )
                continue
            compiled = [False, True] if not plan and os.environ.get("PLANX_COMPILE") else [False]
            for c in compiled:
                fwd, copy, ok = forward_and_copy(op, dtype, rows, n, compiled=c)
                print(
                    f"{op:>10} {str(dtype)[6:]:>8} {rows:>6}x{n:<6} "
                    f"plan {'compile' if c else plan or 'default':>8} "
                    f"fwd {fwd:7.1f} us copy {copy:7.1f} us {copy / fwd:.3f} of copy"
                    + ("" if ok else "  WRONG"),
                    flush=True,
                )


def builds() -> list[Path]:
    """The rendered directories a run times: PLANX_BUILDS, else PLANX_BUILD."""
    return [Path(b) for b in os.environ.get("PLANX_BUILDS", str(BUILD)).split()]


def build(out: Path) -> None:
    dirs = [b / op for b in builds() for op in OPS]
    build_in_place(dirs, out, max_jobs=str(max(2, 16 // len(dirs))))


def run(out: Path) -> None:
    if not os.environ.get("PLANX_NO_BUILD"):
        build(out)
    plans = sorted({p for v in PLANS.values() for p in v})
    for _ in range(int(os.environ.get("PLANX_ROUNDS", "1"))):
        for rendered in builds():
            print(f"== {rendered.name}", flush=True)
            for op in OPS:
                for plan in plans:
                    env = dict(os.environ, PYTHONPATH=str(rendered / op), PLANX_PLAN=plan)
                    if plan.startswith("s"):  # the streaming kernel (PLANX_STREAM, PLANX_STREAM_NOW)
                        env["RK_STREAM"] = plan[1:]
                    elif plan:
                        env["RK_PLAN"] = plan
                    subprocess.run([sys.executable, __file__, "time", "--op", op], env=env)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["render", "build", "run", "time"])
    parser.add_argument("--op")
    parser.add_argument("--out", type=Path, default=Path("/tmp"))
    args = parser.parse_args()
    actions = {"render": render, "build": lambda: build(args.out), "run": lambda: run(args.out),
               "time": lambda: time_one(args.op)}
    actions[args.what]()
