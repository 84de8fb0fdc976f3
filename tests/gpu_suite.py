"""The GPU suite of reference_ops: build, test on CUDA, check memory, benchmark, report.

    python tests/gpu_suite.py                  # on a machine with a CUDA GPU and nvcc
    python tests/gpu_suite.py --ops relu times_two --out /tmp/results

Seven ops took about 12 minutes on an H200, most of it torch.compile in the benchmarks
(--no-bench, build, test and memcheck only: all fifteen in 4 minutes on an H100); where one
call may run 10 minutes, run groups, each after the first with --merge:

    python tests/gpu_suite.py --ops fused_axpby matmul normalize_volume
    python tests/gpu_suite.py --ops relu rgb_to_gray times_two vector_add --merge

For every op in reference_ops/: `pip install --no-build-isolation -e` (the CUDA kernels
built by nvcc for the visible GPU), its own test suite (CUDA tests included), a short run
of its CUDA tests under `compute-sanitizer --tool memcheck`, and its benchmark for each
dtype it supports. Writes RESULTS.md and results.json (default: into reference_ops/).
Needs no opgen, no copier and no network: only torch, ninja, pytest and the CUDA toolkit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REFERENCE_OPS = Path(__file__).resolve().parent.parent / "reference_ops"
# The CUDA tests that walk every kernel path: vector and scalar paths, tails, offsets,
# empty tensors, backward. Under memcheck every access of theirs is checked.
SANITIZED_TESTS = ("cuda and (sizes_around or lengths_around or storage_offset or empty or gradients_match "
                   "or large or mask or float32_columns or rows_that_fill)")
# Benchmarked per dtype: a small size for call overhead, a large one for bandwidth.
SMALL_LOG2, LARGE_LOG2 = 16, 28
# And the sizes the performance goals name: a 4096×4096 image, a 512³ volume.
GOAL_LOG2 = {"rgb_to_gray": [24], "normalize_volume": [27]}
# Rowwise ops: the shapes (rows x n) and dtypes their goals name.
ROWWISE_SHAPES = ["4096x4096", "32768x4096", "4096x16384", "8x131072"]
ROWWISE_DTYPES = ["bfloat16", "float32"]
# The kinds benchmarked by element count (2^k elements), against eager, compile and a copy.
ELEMENTS_KINDS = ("elementwise", "pixel")


START = time.monotonic()


def run(command: list[str], cwd: Path, timeout: int = 1800) -> subprocess.CompletedProcess:
    began = time.monotonic()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    print(f"[{began - START:6.1f}s +{time.monotonic() - began:5.1f}s] $ {' '.join(command)} "
          f"(in {cwd.name}): exit {result.returncode}", flush=True)
    return result


def ops_of(project: Path) -> list[dict]:
    """Each op's name, kind and dtypes, from the project's answers file.

    Read from the YAML copier writes (an `ops:` list whose items' keys sit 4 spaces in,
    their list values as `    - value`), so that no YAML library is needed on the GPU
    machine; deeper keys (params, gradients) are skipped.
    """
    ops, key, in_ops = [], None, False
    for line in (project / ".copier-answers.yml").read_text().splitlines():
        if not line.startswith((" ", "-")):
            in_ops = line.startswith("ops:")
            continue
        if not in_ops:
            continue
        if line.startswith("-   "):
            ops.append({})
            line = "    " + line[4:]
        if not line.startswith("    ") or line.startswith("     "):
            continue  # a deeper level
        item = line[4:]
        if item.startswith("- ") and key:
            ops[-1].setdefault(key, []).append(item[2:].strip())
        elif ":" in item:
            key, value = (part.strip() for part in item.split(":", 1))
            if value:
                ops[-1][key] = value.strip("'\"")
    return ops


def pytest_counts(output: str) -> dict[str, int]:
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", output)}


def build_and_test(op: str, work: Path) -> dict:
    """Build the project `op` (a package of one op or several) and run its tests."""
    project = work / op
    shutil.copytree(REFERENCE_OPS / op, project, ignore=shutil.ignore_patterns("build", "*.so"))
    ops = ops_of(project)
    result: dict = {"op": op, "ops": [o["name"] for o in ops],
                    "kind": "+".join(o["kind"] for o in ops), "dtypes": ops[0].get("dtypes", [])}

    build = run([sys.executable, "-m", "pip", "install", "-v", "--no-deps", "--no-build-isolation",
                 "-e", "."], project)
    result["built_with_cuda"] = f"{op}: building CUDA kernels" in build.stdout + build.stderr
    if build.returncode != 0:
        result["build_error"] = (build.stdout + build.stderr)[-3000:]
        return result

    tests = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"], project)
    result["tests"] = pytest_counts(tests.stdout.splitlines()[-1] if tests.stdout else "")
    result["tests_ok"] = tests.returncode == 0
    if tests.returncode != 0:
        result["test_output"] = tests.stdout[-4000:]

    sanitizer = shutil.which("compute-sanitizer")
    if sanitizer:
        memcheck = run([sanitizer, "--tool", "memcheck", "--error-exitcode", "9", sys.executable,
                        "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-k", SANITIZED_TESTS],
                       project)
        summary = re.findall(r"ERROR SUMMARY: (\d+) error", memcheck.stdout + memcheck.stderr)
        result["sanitizer_errors"] = int(summary[-1]) if summary else None
        result["sanitizer_clean"] = memcheck.returncode == 0 and summary == ["0"] * len(summary)
        result["sanitizer_tests"] = pytest_counts(memcheck.stdout.splitlines()[-1] if memcheck.stdout else "")
        if not result["sanitizer_clean"]:
            result["sanitizer_output"] = (memcheck.stdout + memcheck.stderr)[-4000:]
    return result


def benchmark(result: dict, work: Path, large_log2: int, rowwise_shapes: list[str] = ROWWISE_SHAPES,
              rowwise_dtypes: list[str] = ROWWISE_DTYPES) -> None:
    op, project = result["op"], work / result["op"]
    result["bench"] = {}
    rowwise = result["kind"] == "rowwise"
    for dtype in [d for d in result["dtypes"] if not rowwise or d in rowwise_dtypes]:
        out_file = work / f"{op}_{dtype}.json"
        log2 = sorted({SMALL_LOG2, large_log2, *GOAL_LOG2.get(op, [])})
        # matmul and custom ops benchmark their own sizes; rowwise ops take shapes
        sizes = ([] if result["kind"] in ("matmul", "custom") else ["--shapes", *rowwise_shapes]
                 if rowwise else ["--log2", *map(str, log2)])
        bench = run([sys.executable, f"benchmarks/bench_{op}.py", "--dtype", dtype, *sizes,
                     "--json", str(out_file)], project)
        if bench.returncode == 0:
            result["bench"][dtype] = json.loads(out_file.read_text())["rows"]
        else:
            result["bench"][dtype] = {"error": bench.stderr[-2000:]}


def environment() -> dict:
    import torch

    return {
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device",
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "nvcc": re.findall(r"release ([\d.]+)", subprocess.run(
            ["nvcc", "--version"], capture_output=True, text=True).stdout or "")[:1],
        "date": datetime.date.today().isoformat(),
    }


def measured(env: dict) -> dict:
    """Where and when a run measured: kept with each op's results, so that a merged file
    still says it of the ops an earlier run measured."""
    return {key: env.get(key) for key in ("device", "torch", "date")}


def markdown(env: dict, results: list[dict]) -> str:
    lines = [
        "# reference_ops on the GPU",
        "",
        f"{env['device']}, torch {env['torch']} (CUDA {env['torch_cuda']}), nvcc "
        f"{''.join(env['nvcc'])}, {env['date']}. Written by `python tests/gpu_suite.py`; ops merged",
        "from an earlier run (--merge) keep that run's device, torch and date (last column).",
        "",
        "| op | built with CUDA | tests (CPU + CUDA) | memcheck | measured |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in results:
        tests = ", ".join(f"{n} {k}" for k, n in r.get("tests", {}).items()) or r.get("build_error", "")[:60]
        memcheck = ("clean" if r.get("sanitizer_clean") else f"{r.get('sanitizer_errors')} errors"
                    if "sanitizer_clean" in r else "not run")
        when = r.get("measured") or measured(env)
        lines.append(f"| {r['op']} | {'yes' if r.get('built_with_cuda') else 'NO'} | {tests} | {memcheck} "
                     f"| {when['device']}, torch {when['torch']}, {when['date']} |")
    lines += [
        "",
        "Medians; GB/s counts each input read once and the output written once; % copy is that",
        "bandwidth over a device-to-device copy's, measured in the same run.",
        "",
        "| op | dtype | elements | op µs | eager µs | compile µs | vs eager | vs compile | % copy |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        for dtype, rows in r.get("bench", {}).items() if r.get("kind") in ELEMENTS_KINDS else ():
            if isinstance(rows, dict):
                lines.append(f"| {r['op']} | {dtype} | failed: {rows['error'][-80:]!r} | | | | | | |")
                continue
            for row in rows:
                lines.append(
                    f"| {r['op']} | {dtype} | 2^{row['elements'].bit_length() - 1} | {row['op_us']:.1f} | "
                    f"{row['eager_us']:.1f} | {row['compile_us']:.1f} | {row['speedup_vs_eager']:.2f}x | "
                    f"{row['speedup_vs_compile']:.2f}x | {row['percent_of_copy']:.0f}% |")
    with_backward = [(r, dtype, row) for r in results if r.get("kind") in ELEMENTS_KINDS
                     for dtype, rows in r.get("bench", {}).items() if isinstance(rows, list)
                     for row in rows if "op_fwd_bwd_us" in row]
    if with_backward:
        lines += [
            "",
            "The forward alone and a forward and backward pass (torch.autograd.grad), medians (at",
            f"2^{SMALL_LOG2} elements of one call each between two events: a call costs its dispatch and",
            "launch there); x eager and x compile are their times over the op's.",
            "",
            "| op | dtype | elements | op fwd µs | eager fwd µs | x eager | op fwd+bwd µs "
            "| eager fwd+bwd µs | compile fwd+bwd µs | x eager | x compile |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r, dtype, row in with_backward:
            lines.append(
                f"| {r['op']} | {dtype} | 2^{row['elements'].bit_length() - 1} | {row['op_us']:.1f} | "
                f"{row['eager_us']:.1f} | {row['speedup_vs_eager']:.2f}x | {row['op_fwd_bwd_us']:.1f} | "
                f"{row['eager_fwd_bwd_us']:.1f} | {row.get('compile_fwd_bwd_us', float('nan')):.1f} | "
                f"{row['fwd_bwd_speedup_vs_eager']:.2f}x | "
                f"{row.get('fwd_bwd_speedup_vs_compile', float('nan')):.2f}x |")
    matmuls = [r for r in results if r.get("kind") == "matmul"]
    if matmuls:
        lines += [
            "",
            "Matrix products: medians, TFLOP/s counting 2·M·N·K, cuBLAS through torch.mm with TF32 off.",
            "",
            "| op | dtype | M×K×N | op µs | cuBLAS µs | compile µs | op TFLOP/s | cuBLAS TFLOP/s "
            "| % cuBLAS |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
    for r in matmuls:
        for dtype, rows in r.get("bench", {}).items():
            if isinstance(rows, dict):
                lines.append(f"| {r['op']} | {dtype} | failed: {rows['error'][-80:]!r} | | | | | | |")
                continue
            for row in rows:
                lines.append(
                    f"| {r['op']} | {dtype} | {'×'.join(map(str, row['shape']))} | {row['op_us']:.1f} | "
                    f"{row['cublas_us']:.1f} | {row['compile_us']:.1f} | {row['op_TFLOPs']:.2f} | "
                    f"{row['cublas_TFLOPs']:.2f} | {row['percent_of_cublas']:.0f}% |")
    customs = [r for r in results if r.get("kind") == "custom"]
    if customs:
        lines += [
            "",
            "Custom ops: medians at the sizes of their own make_inputs; fwd+bwd is a forward and",
            "backward pass (torch.autograd.grad) of the op, of its eager reference and of torch.compile.",
            "",
            "| op | dtype | size | op µs | eager µs | compile µs | op GB/s | op fwd+bwd µs "
            "| eager fwd+bwd µs | compile fwd+bwd µs |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
    for r in customs:
        for dtype, rows in r.get("bench", {}).items():
            if isinstance(rows, dict):
                lines.append(f"| {r['op']} | {dtype} | failed: {rows['error'][-80:]!r} | | | | | | | |")
                continue
            for row in rows:
                lines.append(
                    f"| {r['op']} | {dtype} | {row['size']} | {row['op_us']:.1f} | {row['eager_us']:.1f} | "
                    f"{row['compile_us']:.1f} | {row['op_GBps']:.0f} | {row['op_fwd_bwd_us']:.1f} | "
                    f"{row['eager_fwd_bwd_us']:.1f} | {row['compile_fwd_bwd_us']:.1f} |")
    rowwise = [r for r in results if r.get("kind") == "rowwise"]
    if rowwise:
        lines += [
            "",
            "Rowwise ops: medians of ten calls back to back; % copy is the op's bandwidth (each row",
            "tensor read once, the output written once) over a device copy's; fwd+bwd is a",
            "forward and backward pass (torch.autograd.grad) of the op, of eager PyTorch and of",
            "torch.compile.",
            "",
            "| op | dtype | rows×n | op µs | eager µs | compile µs | % copy | op fwd+bwd µs "
            "| eager fwd+bwd µs | compile fwd+bwd µs |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
    for r in rowwise:
        for dtype, rows in r.get("bench", {}).items():
            if isinstance(rows, dict):
                lines.append(f"| {r['op']} | {dtype} | failed: {rows['error'][-80:]!r} | | | | | | | |")
                continue
            for row in rows:
                lines.append(
                    f"| {r['op']} | {dtype} | {'×'.join(map(str, row['shape']))} | {row['op_us']:.1f} | "
                    f"{row['eager_us']:.1f} | {row['compile_us']:.1f} | {row['percent_of_copy']:.0f}% | "
                    f"{row.get('op_fwd_bwd_us', float('nan')):.1f} | "
                    f"{row.get('eager_fwd_bwd_us', float('nan')):.1f} | "
                    f"{row.get('compile_fwd_bwd_us', float('nan')):.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    all_ops = sorted(p.name for p in REFERENCE_OPS.iterdir() if (p / ".copier-answers.yml").is_file())
    parser.add_argument("--ops", nargs="+", default=all_ops, choices=all_ops)
    parser.add_argument("--out", type=Path, default=REFERENCE_OPS, help="where to write the results")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other ops' results already in OUT/results.json")
    parser.add_argument("--rowwise-shapes", nargs="+", default=ROWWISE_SHAPES, metavar="ROWSxN",
                        help=f"the rowwise ops' benchmark shapes (default {' '.join(ROWWISE_SHAPES)})")
    parser.add_argument("--rowwise-dtypes", nargs="+", default=ROWWISE_DTYPES,
                        help=f"the rowwise ops' benchmark dtypes (default {' '.join(ROWWISE_DTYPES)})")
    parser.add_argument("--large-log2", type=int, default=LARGE_LOG2,
                        help=f"the large benchmark size, log2 elements (default {LARGE_LOG2})")
    parser.add_argument("--no-bench", action="store_true",
                        help="build, test and memcheck only: every op fits one call then (the "
                             "benchmarks, torch.compile's above all, take most of the time)")
    args = parser.parse_args()

    env = environment()
    with tempfile.TemporaryDirectory(prefix="gpu-suite-") as tmp:
        # Builds, tests and memcheck runs share the GPU well; timings must not share it.
        with ThreadPoolExecutor(max_workers=len(args.ops)) as pool:
            results = list(pool.map(lambda op: build_and_test(op, Path(tmp)), args.ops))
        for result in results:
            # A project of several ops holds the kernels of the one-op projects: tested, not timed.
            if result.get("tests_ok") and result["ops"] == [result["op"]] and not args.no_bench:
                benchmark(result, Path(tmp), args.large_log2, args.rowwise_shapes, args.rowwise_dtypes)
    args.out.mkdir(parents=True, exist_ok=True)
    for result in results:
        result["measured"] = measured(env)
    if args.merge and (args.out / "results.json").is_file():
        earlier_run = json.loads((args.out / "results.json").read_text())
        earlier = [r for r in earlier_run["ops"] if r["op"] not in args.ops]
        for result in earlier:
            result.setdefault("measured", measured(earlier_run))
        results = sorted(earlier + results, key=lambda r: r["op"])
    (args.out / "results.json").write_text(json.dumps({**env, "ops": results}, indent=2) + "\n")
    (args.out / "RESULTS.md").write_text(markdown(env, results))
    print(markdown(env, results))
    failed = [r["op"] for r in results if not (r.get("tests_ok") and r.get("sanitizer_clean", True))]
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
