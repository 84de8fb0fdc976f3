"""Time a generated rowwise reference op as bench_rowwise.py times the kernel library.

    python tests/perf/rowwise/bench_generated.py --op softmax --label new --out DIR

The op of the installed package (`softmax`, `rms_norm` or `layer_norm`: reference_ops/<op>,
or an older build of it; `add_rms_norm`: `opgen new add_rms_norm --kind rowwise --preset
add_rmsnorm`, which returns the normalized rows and the sum) against eager PyTorch, torch.compile of it, Liger-Kernel and a
device copy, with the same timing as bench_rowwise.py (triton's do_bench medians, the L2
cleared before each run; forward + backward through autograd, with respect to every
tensor, as CUDA-graph replays, so that autograd's host time does not hide the GPU's). Two
builds of one package cannot share a process: run this once per build, each with its own
--label, and compare the json files. `--column-dtype float32`: the weights and biases in
float32 whatever the rows' dtype, as autocast passes them with bfloat16 activations.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rowwise import bench, graphed  # noqa: E402

SHAPES = [(4096, 4096), (32768, 4096), (4096, 16384), (8, 131072)]
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}
# The reference ops' default eps.
EPS = {"rms_norm": 1e-6, "layer_norm": 1e-5, "add_rms_norm": 1e-6}
# Row tensors read and outputs written, in copies of one row tensor: "of copy" is the op's
# bandwidth over the copy's.
COPIES = {"softmax": 1, "rms_norm": 1, "layer_norm": 1, "add_rms_norm": 2}


def add_rms_norm_eager(x, r, w):
    h = x + r
    return F.rms_norm(h, (h.shape[-1],), w, EPS["add_rms_norm"]), h


def eager(op: str):
    if op == "softmax":
        return lambda x: torch.softmax(x, -1)
    if op == "rms_norm":
        return lambda x, w: F.rms_norm(x, (x.shape[-1],), w, EPS[op])
    if op == "add_rms_norm":
        return add_rms_norm_eager
    return lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, EPS[op])


def liger(op: str):
    from liger_kernel.transformers import functional as lf

    if op == "softmax":
        return lf.liger_softmax
    if op == "rms_norm":
        return lambda x, w: lf.liger_rms_norm(x, w, EPS[op])
    if op == "add_rms_norm":
        from liger_kernel.ops import LigerFusedAddRMSNormFunction

        return lambda x, r, w: LigerFusedAddRMSNormFunction.apply(x, r, w, EPS[op], 0.0, "llama", False)
    return lambda x, w, b: lf.liger_layer_norm(x, w, b, EPS[op])


def inputs(op: str, rows: int, n: int, dtype: torch.dtype,
           column_dtype: torch.dtype | None = None) -> list[torch.Tensor]:
    row_tensors = [torch.randn(rows, n, device="cuda", dtype=dtype) for _ in range(2 if op == "add_rms_norm" else 1)]
    columns = {"softmax": 0, "rms_norm": 1, "layer_norm": 2, "add_rms_norm": 1}[op]
    column_dtype = column_dtype or dtype
    return row_tensors + [1 + 0.5 * torch.randn(n, device="cuda", dtype=column_dtype) for _ in range(columns)]


def implementations(op: str, skip: set[str]) -> dict:
    impls = {"ours": getattr(importlib.import_module(op), op), "eager": eager(op)}
    if "compile" not in skip:
        impls["compile"] = torch.compile(eager(op), dynamic=False)
    if "liger" not in skip:
        try:
            impls["liger"] = liger(op)
        except Exception as error:  # noqa: BLE001
            print(f"liger: {error!r}")
    return impls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--op", default="softmax", choices=list(COPIES))
    parser.add_argument("--label", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip", default="", help="comma-separated: compile, liger")
    parser.add_argument("--column-dtype", choices=["float32"], default=None)
    parser.add_argument("--shapes", nargs="+", metavar="ROWSxN",
                        default=[f"{rows}x{n}" for rows, n in SHAPES])
    args = parser.parse_args()
    shapes = [tuple(int(size) for size in shape.split("x")) for shape in args.shapes]
    results: dict[str, float | str] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    impls = implementations(args.op, set(filter(None, args.skip.split(","))))
    for dname, dtype in DTYPES.items():
        for rows, n in shapes:
            column_dtype = getattr(torch, args.column_dtype) if args.column_dtype else None
            tensors = inputs(args.op, rows, n, dtype, column_dtype)
            x = tensors[0]
            # The incoming gradient of each output.
            g = [torch.randn_like(x) for _ in range(2 if args.op == "add_rms_norm" else 1)]
            dst = torch.empty_like(x)
            copy = bench(lambda: dst.copy_(x))  # noqa: B023
            results[f"copy/{dname}/{rows}x{n}"] = copy
            line = [f"{dname} {rows}x{n}: copy {copy:.1f} us"]
            for name, fn in impls.items():
                key = f"{name}/{dname}/{rows}x{n}"
                try:
                    with torch.no_grad():
                        forward = bench(lambda: fn(*tensors))  # noqa: B023
                    leaves = [t.detach().requires_grad_(True) for t in tensors]

                    def forward_backward():
                        return torch.autograd.grad(fn(*leaves), leaves, g)  # noqa: B023

                    replay, _graph = graphed(forward_backward)
                    both = bench(replay)
                    results[key + "/fwd"], results[key + "/fwdbwd"] = forward, both
                    line.append(f"{name} fwd {forward:.1f} ({COPIES[args.op] * copy / forward:.2f} of copy) "
                                f"fwd+bwd {both:.1f}")
                except Exception as error:  # noqa: BLE001
                    results[key + "/fwd"] = results[key + "/fwdbwd"] = "fails"
                    line.append(f"{name} fails: {type(error).__name__}: {str(error)[:100]}")
                torch._dynamo.reset()
            print(f"[{args.op} {args.label}] " + " | ".join(line), flush=True)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"generated_{args.op}_{args.label}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
