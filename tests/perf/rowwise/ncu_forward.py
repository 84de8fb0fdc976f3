"""Runs each forward once (after warm-up) so that Nsight Compute can read its counters.

    ncu --clock-control none --section SpeedOfLight --section Occupancy \
        --section LaunchStats --section WarpStateStats --section SchedulerStats \
        -k regex:'row_kernel|_forward_kernel|softmax' \
        python tests/perf/rowwise/ncu_forward.py --ops softmax,ln --dtypes bf16 \
        --shapes 4096x4096 [--variant NAME=path/NS.so] [--liger]

Every implementation is called twice; read the second launch of each kernel name
(the first may include compilation and cold caches). Prints the order of the calls on
stderr so that the report's kernels can be told apart.

    python tests/perf/rowwise/ncu_forward.py --summarize ncu.txt

condenses such a report (ncu's text output, stdout and stderr together) to one line a
launch: duration, DRAM throughput, registers, occupancy and how often a scheduler had
an instruction to issue (high = the kernel is issue-bound, not waiting on memory).
"""
import argparse
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_rowwise as br  # noqa: E402
import build_ext  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--variant", action="append", default=[])
ap.add_argument("--shapes", default="4096x4096")
ap.add_argument("--ops", default="softmax,ln")
ap.add_argument("--dtypes", default="bf16")
ap.add_argument("--liger", action="store_true")
ap.add_argument("--summarize", metavar="NCU_TXT")
a = ap.parse_args()


def summarize(path):
    text = open(path).read()
    calls = iter(line for line in text.splitlines() if line.startswith("called "))
    launches = re.split(r"\n  (?=\S.*\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\))", text)[1:]
    keys = {"Duration": "us", "DRAM Throughput": "dram%", "Registers Per Thread": "regs",
            "Theoretical Occupancy": "occ%", "Achieved Occupancy": "achieved%",
            "One or More Eligible": "issue%", "Warp Cycles Per Issued Instruction": "cyc/inst"}
    print("| call | kernel | " + " | ".join(keys.values()) + " |")
    print("|---" * (len(keys) + 2) + "|")
    for i, launch in enumerate(launches):
        call = next(calls, "?")[len("called "):] if i % 2 == 0 else "(again)"
        name = re.sub(r"\((rowk::)?RowParams.*|, Context.*", "", launch.splitlines()[0]).replace("void ", "")
        vals = []
        for k in keys:
            m = re.search(r"\n\s+" + re.escape(k) + r"\s+\S+\s+([\d.,]+)", launch)
            vals.append(m.group(1) if m else "?")
        print(f"| {call} | {name[:70]} | " + " | ".join(vals) + " |")


if a.summarize:
    summarize(a.summarize)
    sys.exit(0)
build_ext.load()
impls = [("ours", "rowk_bench"), *build_ext.load_variants(a.variant)]
for dn in a.dtypes.split(","):
    dtype = torch.bfloat16 if dn == "bf16" else torch.float32
    for shape in a.shapes.split(","):
        rows, N = (int(v) for v in shape.split("x"))
        for op in a.ops.split(","):
            x, w, b = br.make_inputs(op, rows, N, dtype)
            fns = [(name, br.ours_fwd_only(op, ns)) for name, ns in impls]
            if a.liger:
                fns.append(("liger", br.liger(op)))
            for name, f in fns:
                with torch.no_grad():
                    for _ in range(2):
                        f(x, w, b)
                torch.cuda.synchronize()
                print(f"called {op} {dn} {shape} {name} x2", file=sys.stderr)
