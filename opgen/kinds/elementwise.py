"""elementwise: y = f(tensors that broadcast, scalars), one output element per element."""

from __future__ import annotations

from typing import Any

from .. import cpp_expression
from ..cpp_expression import body_calls
from ..spec import (
    MOST_ARGUMENTS,
    SpecError,
    check_backward_dtypes,
    check_python_expression,
    cpp_formula,
    formula_names,
    gradients_text,
    parse_gradients,
)

NAME = "elementwise"
SUMMARY = "y = f(tensors that broadcast, scalars), one output element per element"
DEFAULTS: dict[str, Any] = {
    "signature": "x: Tensor, alpha: float = 2.0",
    "forward": "alpha * x",
    "gradients": "x: alpha * grad",
    "backward": True,
}
OPTIONS = frozenset({"forward", "gradients"})
# Its glue has a stable-ABI version (templates/kinds/elementwise/stable/): opgen new --abi stable.
STABLE_ABI = True


def settle(answers: dict[str, Any], settle, params: list[dict[str, Any]],
           given: set[str]) -> dict[str, Any]:
    names = {p["name"] for p in params}
    tensors = {p["name"] for p in params if p["type"] == "Tensor"}
    # The default formula, where the signature has its names (another default value is fine).
    settle("forward", DEFAULTS["forward"] if {"x", "alpha"} <= names else None,
           "C++ expression for one output element")
    if "forward" not in answers:
        raise SpecError(f"--signature {answers['signature']!r} was given without --forward, and the "
                        "default formula uses x and alpha; pass --forward 'C++ expression'")
    forward = cpp_formula("forward", answers["forward"], formula_names(params), tensors)
    if answers.get("exact") and forward.inexact:
        # Its generated test compares the devices bit for bit, and would fail from the start.
        calls = ", ".join(dict.fromkeys(forward.inexact))
        raise SpecError(f"--forward {answers['forward']!r} calls {calls}, which the CPU's C library and "
                        "CUDA round differently in the last bit, so --exact cannot hold; drop --exact, or "
                        "use only + - * /, sqrt, fma, pow(x, n) for an integer n up to 16 and the functions "
                        "that do not round (abs, floor, ceil, trunc, rint, fmin, fmax, min, max, clamp, "
                        "copysign, fmod)")
    # The formula in PyTorch is the tests' reference, unless the user gives one.
    settle("reference", forward.torch, "the same op as a PyTorch expression")
    if "reference" not in answers:
        raise SpecError(f"--forward {answers['forward']!r} {forward.why_not_torch}, so it has no PyTorch "
                        "twin for the tests to check it against; pass --reference with the same op in "
                        "PyTorch over the arguments")
    answers["reference"] = check_python_expression("reference", answers["reference"], names)
    if answers["backward"]:
        check_backward_dtypes(answers)
        # The default gradient belongs to the default formula over the default tensors.
        same_formula = answers["forward"] == DEFAULTS["forward"] and tensors == {"x"}
        settle("gradients", DEFAULTS["gradients"] if same_formula else None,
               "'input: C++ expression using grad' per tensor input, ';'-separated")
        if "gradients" not in answers:
            option = "forward" if "forward" in given else "signature"
            raise SpecError(f"--{option} {answers[option]!r} was given without --gradients, and the "
                            "default gradient is for the default formula; pass --gradients 'x: "
                            "<expression using grad>' for each tensor input, or --no-backward")
        grads, non_differentiable = parse_gradients(answers["gradients"], params)
        # The backward op's schema: grad, the tensors the formulas read, the float scalars.
        reads = {name for g in grads for name in g["reads"]}
        count = 1 + len(reads) + sum(p["type"] != "Tensor" for p in params)
        if count > MOST_ARGUMENTS:
            raise SpecError(f"--gradients {answers['gradients']!r}: the backward op would take {count} "
                            f"arguments (grad, {len(reads)} tensors its formulas read, the floats), and "
                            f"a PyTorch op takes at most {MOST_ARGUMENTS}; read fewer tensors")
    else:
        grads, non_differentiable = [], []
    conditions = saved_conditions(grads, params)
    return {"forward": answers["forward"], "forward_cpp": forward.cpp, "forward_body": forward.body,
            "gradients": grads, "non_differentiable": non_differentiable, "saved_conditions": conditions,
            "cpu_grain": cpu_grain([forward.body, *(g["body"] for g in grads)])}


# At most this many conditions are saved as bits; a gradient that reads more saves its inputs.
MOST_SAVED_CONDITIONS = 4


def saved_conditions(grads: list[dict[str, Any]], params: list[dict[str, Any]]) -> list[dict[str, str]]:
    """What the forward saves for the backward on CUDA, where every gradient formula reads the
    tensors only through conditions (relu's `x > 0 ? grad : 0`): those conditions, one bit an
    element each, instead of the tensors (4 bytes an element for float32). Each gradient then
    also gets `cpp_given`, its C++ over the conditions. [] where a gradient reads a tensor
    otherwise (or none reads one): the forward saves the tensors the formulas read.

    Gradients that are grad itself have no kernel (templates/kinds/common/op_file.jinja)."""
    names = {**formula_names(params), "grad": cpp_expression.FLOAT}
    if any(name.startswith("condition_") for name in names):
        return []  # the functions of the gradients over the conditions name them condition_<k>
    tensors = {p["name"] for p in params if p["type"] == "Tensor"}
    conditions: list[cpp_expression.Condition] = []
    given = {}
    for g in grads:
        if g["formula"] == "grad":
            continue
        cpp = cpp_expression.given_conditions(g["formula"], names, tensors, conditions)
        if cpp is None:
            return []
        given[g["input"]] = cpp
    if not conditions or len(conditions) > MOST_SAVED_CONDITIONS:
        return []
    for g in grads:
        if g["input"] in given:
            g["cpp_given"] = given[g["input"]]
            g["body_given"] = cpp_expression.shared_calls(given[g["input"]], names)
    return [{"cpp": c.cpp, "text": c.text} for c in conditions]


# Elements per CPU task: torch's own 32768 where an element costs a few instructions. Where it
# calls exp, tanh, ... it costs about ten times more, and tasks take fewer (eager's GELU takes
# 6144): on 16 cores, 2^16 elements of a tanh formula took 6x eager's time in 2 tasks.
CPU_GRAIN, SMALLEST_CPU_GRAIN = 32768, 4096


def cpu_grain(bodies: list[dict]) -> int:
    calls = max(body_calls(body) for body in bodies)
    return max(SMALLEST_CPU_GRAIN, CPU_GRAIN // (1 + 4 * calls))


def options(record: dict[str, Any]) -> dict[str, Any]:
    """The command-line answers of the fields settle() records."""
    given = {"forward": record["forward"]}
    if record["gradients"]:
        given["gradients"] = gradients_text(record["gradients"], record["non_differentiable"])
    return given
