"""Time a generated softmax project (opgen's rowwise kind) as bench_rowwise.py times the library.

    python tests/perf/rowwise/bench_generated.py --label new --out DIR   # in a process where
                                                                          # `import softmax` finds the build

The op of the installed package `softmax` (reference_ops/softmax, or an older build of it)
against eager torch.softmax, torch.compile of it, Liger-Kernel's softmax and a device copy,
with the same timing as bench_rowwise.py (triton's do_bench medians, the L2 cleared before
each run; forward + backward through autograd as CUDA-graph replays, so that autograd's
host time does not hide the GPU's). Two builds of one package cannot share a process: run
this once per build, each with its own --label, and compare the json files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rowwise import bench, graphed  # noqa: E402

SHAPES = [(4096, 4096), (32768, 4096), (4096, 16384), (8, 131072)]
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}


def implementations(skip: set[str]) -> dict:
    import softmax

    impls = {"ours": softmax.softmax, "eager": lambda x: torch.softmax(x, -1)}
    if "compile" not in skip:
        impls["compile"] = torch.compile(lambda x: torch.softmax(x, -1), dynamic=False)
    if "liger" not in skip:
        try:
            from liger_kernel.transformers import functional as liger

            impls["liger"] = liger.liger_softmax
        except Exception as error:  # noqa: BLE001
            print(f"liger: {error!r}")
    return impls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip", default="", help="comma-separated: compile, liger")
    args = parser.parse_args()
    results: dict[str, float | str] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    impls = implementations(set(filter(None, args.skip.split(","))))
    for dname, dtype in DTYPES.items():
        for rows, n in SHAPES:
            x = torch.randn(rows, n, device="cuda", dtype=dtype)
            g = torch.randn_like(x)
            dst = torch.empty_like(x)
            copy = bench(lambda: dst.copy_(x))  # noqa: B023
            results[f"copy/{dname}/{rows}x{n}"] = copy
            line = [f"{dname} {rows}x{n}: copy {copy:.1f} us"]
            for name, fn in impls.items():
                key = f"{name}/{dname}/{rows}x{n}"
                try:
                    with torch.no_grad():
                        forward = bench(lambda: fn(x))  # noqa: B023
                    xp = x.detach().requires_grad_(True)

                    def forward_backward():
                        return torch.autograd.grad(fn(xp), [xp], g)  # noqa: B023

                    replay, _graph = graphed(forward_backward)
                    both = bench(replay)
                    results[key + "/fwd"], results[key + "/fwdbwd"] = forward, both
                    line.append(f"{name} fwd {forward:.1f} ({copy / forward:.2f} of copy) fwd+bwd {both:.1f}")
                except Exception as error:  # noqa: BLE001
                    results[key + "/fwd"] = results[key + "/fwdbwd"] = "fails"
                    line.append(f"{name} fails: {type(error).__name__}: {str(error)[:100]}")
                torch._dynamo.reset()
            print(f"[{args.label}] " + " | ".join(line), flush=True)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"generated_softmax_{args.label}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
