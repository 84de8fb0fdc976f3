"""matmul: C = A @ B for 2-D matrices, a shared-memory tiled kernel (tensor cores for half types)."""

from __future__ import annotations

from typing import Any

from ..spec import FLOAT_DTYPES, SpecError, check_python_expression

NAME = "matmul"
SUMMARY = "C = A @ B for 2-D matrices, a shared-memory tiled kernel"
DEFAULTS: dict[str, Any] = {"signature": "a: Tensor, b: Tensor", "backward": True}
OPTIONS = frozenset()
# No --out-dtype (the product has the inputs' dtype): not asked on a terminal.
ASKS_OUT_DTYPE = False
# Its glue has a stable-ABI version (templates/kinds/matmul/stable/): opgen new --abi stable.
STABLE_ABI = True


def settle(answers: dict[str, Any], settle, params: list[dict[str, Any]],
           given: set[str]) -> dict[str, Any]:
    if [p["type"] for p in params] != ["Tensor", "Tensor"]:
        raise SpecError(f"--signature {answers['signature']!r}: a matmul op takes exactly two tensors "
                        "and nothing else, e.g. --signature 'a: Tensor, b: Tensor'")
    if any(d not in FLOAT_DTYPES for d in answers["dtypes"]):
        raise SpecError(f"--dtypes {','.join(answers['dtypes'])}: matmul supports the floating dtypes "
                        f"{', '.join(FLOAT_DTYPES)} only")
    if answers["out_dtype"] != "same":
        raise SpecError(f"--out-dtype {answers['out_dtype']}: matmul outputs the inputs' dtype; "
                        "drop --out-dtype")
    if answers["exact"]:
        raise SpecError("matmul is not --exact: its CUDA kernels sum in another order than the CPU's; "
                        "drop --exact (or keep matmul out of an --exact project)")
    a, b = (p["name"] for p in params)
    settle("reference", f"{a} @ {b}", "the same op as a PyTorch expression")
    answers["reference"] = check_python_expression("reference", answers["reference"], {a, b})
    return {}  # no fields of its own: the two matrices are its params


def options(record: dict[str, Any]) -> dict[str, Any]:
    return {}
