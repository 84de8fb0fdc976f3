"""rowwise: each row of the last dimension reduced (sum, max, min, mean), then mapped.

An op of this kind reads row tensors (shape (..., N), one row at a time) and per-column
tensors (shape (N,), such as a weight or a bias), computes per-row reductions of element
expressions, each of which may use the ones before it, and writes one output element per
input element from the element, the reductions, the row length `n` and float scalars.
RMSNorm, LayerNorm, softmax and log-softmax are presets; their formulas stay editable.
An op may have several outputs, each named with its expression ('y: ...; h: x + r', the
fused residual add + RMSNorm of the add_rmsnorm preset); its backward then reads each
output's value by name and the gradient of each as grad_<name>. An output whose expression
reads no tensor (LayerNorm's 'mean: mu; rstd: rsqrt(var + eps)', a quantizer's scale) is one
value a row, shape (...), in the arithmetic type (float32; float64 for float64 rows), as
torch.native_layer_norm returns its mean and rstd; it is not differentiable. The outputs over
the rows take --out-dtype where it is given (a per-row int8 quantizer: 'q: ...; scale: ...'
with --out-dtype int8 --no-backward), converted as torch converts integers (truncated, wrapped to the range).

The backward has reductions of its own over `grad` and `y` (the output element): the
gradient of a row tensor is an element expression over them; the gradient of a column
tensor is an element expression summed over the rows.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

from .. import cpp_expression
from ..naming import CPP_KEYWORDS
from ..spec import (
    FLOAT_DTYPES,
    FORMULA_NAMES,
    MOST_ARGUMENTS,
    NON_DIFFERENTIABLE,
    SpecError,
    check_backward_dtypes,
    check_python_expression,
    cpp_formula,
    gradients_text,
    parentheses_balance,
    parse_gradients,
)

NAME = "rowwise"
SUMMARY = "per-row reductions over the last dimension, then one output per element (RMSNorm, softmax)"
OPTIONS = frozenset({"preset", "columns", "reductions", "forward", "grad_reductions", "gradients"})
# Its glue has a stable-ABI version (templates/kinds/rowwise/stable/): opgen new --abi stable.
STABLE_ABI = True
NOT_INLINE = "their kernels share csrc/row_kernels.cuh, which the one file does not hold"
REDUCE_OPS = ("sum", "mean", "max", "min")
# Names the formulas of this kind give meaning to: the row length and, in the backward,
# the incoming gradient and the output element.
KIND_NAMES = ("n", "y", "grad")
# The backward op's argument that holds the forward's reductions (csrc/<op>_kernel.h).
SAVED_REDUCTIONS = "reductions"

# Presets: every answer of the op but its name. The formulas are C++ over the arguments,
# the reductions and n; the reference is PyTorch over the arguments.
PRESETS: dict[str, dict[str, Any]] = {
    "rmsnorm": {
        "signature": "x: Tensor, weight: Tensor, eps: float = 1e-06",
        "columns": "weight",
        "reductions": "ms = mean(x * x)",
        "forward": "x * rsqrt(ms + eps) * weight",
        "reference": "torch.nn.functional.rms_norm(x, [x.shape[-1]], weight, eps)",
        "grad_reductions": "gx = mean(grad * weight * x)",
        "gradients": "x: (grad * weight - x * (gx / (ms + eps))) * rsqrt(ms + eps); "
                     "weight: grad * x * rsqrt(ms + eps)",
    },
    "layernorm": {
        "signature": "x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-05",
        "columns": "weight, bias",
        "reductions": "mu = mean(x); var = mean((x - mu) * (x - mu))",
        "forward": "(x - mu) * rsqrt(var + eps) * weight + bias",
        "reference": "torch.nn.functional.layer_norm(x, [x.shape[-1]], weight, bias, eps)",
        "grad_reductions": "g1 = mean(grad * weight); g2 = mean(grad * weight * (x - mu))",
        "gradients": "x: (grad * weight - g1 - (x - mu) * (g2 / (var + eps))) * rsqrt(var + eps); "
                     "weight: grad * (x - mu) * rsqrt(var + eps); bias: grad",
    },
    "softmax": {
        "signature": "x: Tensor",
        "columns": "",
        "reductions": "m = max(x); z = sum(exp(x - m))",
        "forward": "exp(x - m) * (1 / z)",
        "reference": "torch.softmax(x, -1)",
        "grad_reductions": "gy = sum(grad * y)",
        "gradients": "x: y * (grad - gy)",
    },
    # The residual add fused into RMSNorm, as transformer blocks call it: h = x + residual
    # goes on down the residual stream, y = rms_norm(h) into the next layer.
    "add_rmsnorm": {
        "signature": "x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-06",
        "columns": "weight",
        "reductions": "ms = mean((x + residual) * (x + residual))",
        "forward": "y: (x + residual) * rsqrt(ms + eps) * weight; h: x + residual",
        "reference": "(torch.nn.functional.rms_norm(x + residual, [x.shape[-1]], weight, eps), "
                     "x + residual)",
        "grad_reductions": "gh = mean(grad_y * weight * h)",
        "gradients": "x: (grad_y * weight - h * (gh / (ms + eps))) * rsqrt(ms + eps) + grad_h; "
                     "residual: (grad_y * weight - h * (gh / (ms + eps))) * rsqrt(ms + eps) + grad_h; "
                     "weight: grad_y * h * rsqrt(ms + eps)",
    },
    "log_softmax": {
        "signature": "x: Tensor",
        "columns": "",
        "reductions": "m = max(x); z = sum(exp(x - m))",
        "forward": "x - m - log(z)",
        "reference": "torch.log_softmax(x, -1)",
        "grad_reductions": "g = sum(grad)",
        "gradients": "x: grad - exp(y) * g",
    },
}
DEFAULTS: dict[str, Any] = {**PRESETS["rmsnorm"], "backward": True}


def defaults(answers: dict[str, Any]) -> dict[str, Any]:
    """The preset's answers where --preset is given, else rmsnorm's."""
    preset = answers.get("preset")
    return {**DEFAULTS, **PRESETS[preset]} if preset in PRESETS else DEFAULTS


def _reserved(name: str) -> bool:
    """Whether a reduction or output may not take `name`: it is a C++ parameter of the formulas
    that read it (reduce_z(acc_t x, acc_t m)) and a Python name in the generated README, so no
    keyword, nor a name the formulas use (a math function, acc_t, torch)."""
    return keyword.iskeyword(name) or name in CPP_KEYWORDS or name in FORMULA_NAMES


def parse_reductions(what: str, text: str, names: set[str], stages: dict[str, int] | None = None,
                     outputs: tuple[str, ...] = ("y",)) -> list[dict[str, Any]]:
    """'m = max(x); z = sum(exp(x - m))' -> [{name, op, expression, cpp, stage}], each checked over
    `names` and the reductions before it.

    A reduction's stage is one past the latest stage of the reductions it reads (0 when it
    reads none): the CUDA kernels reduce a stage's reductions together, in one round.
    `stages` gives the stages of names computed before these (the forward's reductions, for
    the backward's); `outputs`, the output elements (y), come after all of them.
    """
    reductions: list[dict[str, Any]] = []
    known = set(names)
    stages = dict(stages or {})
    last = max(stages.values(), default=-1)
    stages.update({name: last for name in outputs if name in names})
    for piece in filter(str.strip, text.split(";")):
        match = re.fullmatch(r"\s*([a-z][a-z0-9_]*)\s*=\s*([a-z]+)\s*\((.*)\)\s*", piece)
        named = None if match else re.match(r"\s*(\w+)\s*=", piece)
        if named and not re.fullmatch(r"[a-z][a-z0-9_]*", named.group(1)):
            raise SpecError(f"{what}: reduction {named.group(1)!r} must be lower snake case, e.g. ms "
                            "or row_max")
        if not match or match.group(2) not in REDUCE_OPS or not parentheses_balance(match.group(3)):
            raise SpecError(f"{what}: {piece.strip()!r} needs the form 'name = op(expression)' with op one "
                            f"of {', '.join(REDUCE_OPS)}, e.g. 'ms = mean(x * x)'")
        name, op, expression = match.group(1), match.group(2), match.group(3).strip()
        if _reserved(name):
            raise SpecError(f"{what}: reduction {name!r} is a Python or C++ keyword or a name the "
                            "formulas use (a math function, acc_t, torch); name the reduction otherwise, "
                            f"e.g. row_{name}")
        if name in known:
            raise SpecError(f"{what}: {name!r} is already an argument, a reduction or one of "
                            f"{', '.join(KIND_NAMES)}; name the reduction otherwise")
        formula = cpp_formula(f"{what} {name!r}", expression, known)
        stage = 1 + max((stages[u] for u in formula.used if u in stages), default=-1)
        reductions.append({"name": name, "op": op, "expression": expression, "cpp": formula.cpp,
                           "body": formula.body, "stage": stage})
        stages[name] = stage
        known.add(name)
    return reductions


# 'name: expression' at the start of one of --forward's outputs (not C++'s 'std::').
OUTPUT_NAME = re.compile(r"\s*([a-z][a-z0-9_]*)\s*:(?!:)(.*)", re.S)


def parse_outputs(text: str, names: set[str], tensors: set[str]) -> list[dict[str, Any]]:
    """'y: x * rsqrt(ms + eps) * weight; h: x + r' -> [{name, expression, cpp, body}], each
    expression checked over `names`; [] for one unnamed expression (the op's one output,
    which settle() parses).

    An output whose expression reads none of `tensors` is one value a row: its record has
    per_row True. At least one output is an element of the rows.
    """
    pieces = [p for p in text.split(";") if p.strip()]
    named = [OUTPUT_NAME.fullmatch(p) for p in pieces]
    if not any(named):
        if len(pieces) > 1:
            raise SpecError(f"--forward {text!r}: several outputs need a name each, "
                            "'y: <expression>; h: <expression>'")
        return []
    outputs: list[dict[str, Any]] = []
    for piece, match in zip(pieces, named):
        if not match:
            raise SpecError(f"--forward {text!r}: {piece.strip()!r} needs the form 'name: expression', "
                            "as each of several outputs")
        name, expression = match.group(1), match.group(2).strip()
        if _reserved(name):
            raise SpecError(f"--forward {text!r}: the output name {name!r} is a Python or C++ keyword or a "
                            "name the formulas use (a math function, acc_t, torch); name the output otherwise")
        # y may name an output (which is what y means with one); grad, the one output's
        # gradient, may not.
        taken = names | {"grad"} | {o["name"] for o in outputs}
        if name in taken or f"grad_{name}" in names:
            raise SpecError(f"--forward {text!r}: the output name {name!r} (or grad_{name}, its gradient's "
                            "name in the backward) is already an argument, a reduction, an output, n or "
                            "grad; name the output otherwise")
        formula = cpp_formula(f"--forward output {name!r}", expression, names)
        outputs.append({"name": name, "expression": expression, "cpp": formula.cpp, "body": formula.body,
                        **({"per_row": True} if not formula.used & tensors else {})})
    if len(outputs) == 1:
        raise SpecError(f"--forward {text!r}: one output takes no name; give its expression alone")
    if all(o.get("per_row") for o in outputs):
        raise SpecError(f"--forward {text!r}: every output reads no tensor, so each is one value a row; a "
                        "rowwise op returns at least one output over the rows' elements")
    return outputs


def kept_term(reductions: list[dict[str, Any]], forwards: dict[str, str],
              taken: set[str]) -> dict[str, Any] | None:
    """The reduction whose term the outputs compute again, for the CPU's vector loops to keep
    from its pass over the row instead: softmax's z = sum(exp(x - m)) and its output
    exp(x - m) * (1 / z), whose exp is most of the CPU's time (eager keeps it too).

    `forwards` maps the function of each output over the rows (forward, or forward_<name>)
    to its C++. The term is the last reduction's that is one costly call as a whole and that
    some output makes; the record names the parameter that carries it (not one of `taken`)
    and gives the body of each such output with the parameter in place of the call. None
    where no output computes a reduction's term again.
    """
    for reduction in reversed(reductions):
        term = reduction["cpp"]
        if not cpp_expression.is_one_costly_call(term):
            continue
        parameter = next(name for k in range(len(taken) + 1)
                         if (name := f"{reduction['name']}_term" + (f"_{k}" if k else "")) not in taken)
        bodies = {function: cpp_expression.shared_calls(given, taken | {parameter})
                  for function, cpp in forwards.items()
                  if (given := cpp_expression.with_call_named(cpp, term, parameter)) != cpp}
        if bodies:
            return {"reduction": reduction["name"], "parameter": parameter, "bodies": bodies}
    return None


def check_no_per_row_outputs(option: str, text: str, per_row: set[str]) -> None:
    """The backward's formulas may not read a per-row output nor its gradient: it has none
    (not differentiable), and its value is a formula of the reductions they can read. (A
    name followed by '(' is a reduction's op, as in 'g = mean(grad)', not an output.)"""
    read = sorted(name for name in per_row | {f"grad_{p}" for p in per_row}
                  if re.search(rf"\b{name}\b(?!\s*\()", text))
    if read:
        raise SpecError(f"{option} {text!r} reads {read[0]!r}, but a per-row output is not differentiable: "
                        "read the reductions it is computed from instead")


def reductions_text(reductions: list[dict[str, str]]) -> str:
    return "; ".join(f"{r['name']} = {r['op']}({r['expression']})" for r in reductions)


def settle(answers: dict[str, Any], settle, params: list[dict[str, Any]],
           given: set[str]) -> dict[str, Any]:
    preset = answers.get("preset")
    if preset is not None and preset not in PRESETS:
        raise SpecError(f"--preset {preset!r} is not one of {', '.join(PRESETS)}")
    # A formula's default belongs to the answers before it: each applies only while every
    # answer before it is the preset's (or the default op's), so a reduction of one's own
    # never meets a preset's forward or gradients.
    base = defaults(answers)
    if answers["signature"] != base["signature"]:
        if preset:
            raise SpecError(f"--signature {answers['signature']!r} differs from --preset {preset}'s "
                            f"({base['signature']!r}); drop --signature, or drop --preset and give "
                            "--reductions, --forward, --reference and --gradients for it")
        base = {}

    def settle_formula(key: str, help_text: str) -> None:
        nonlocal base
        settle(key, base.get(key), help_text)
        if answers.get(key) != base.get(key):
            base = {}
    for name in KIND_NAMES:
        if name in {p["name"] for p in params}:
            raise SpecError(f"--signature {answers['signature']!r}: argument {name!r} would hide {name}, "
                            f"which rowwise formulas use ({', '.join(KIND_NAMES)}); rename it")
    if any(d not in FLOAT_DTYPES for d in answers["dtypes"]):
        raise SpecError(f"--dtypes {','.join(answers['dtypes'])}: rowwise ops support the floating "
                        f"dtypes {', '.join(FLOAT_DTYPES)} only")
    # --out-dtype is the row outputs' dtype (a quantizer's int8); per-row outputs keep the
    # arithmetic type. Gradients need rows of the inputs' dtype.
    if answers["backward"]:
        check_backward_dtypes(answers)
    if answers["exact"]:
        raise SpecError("rowwise ops are not --exact: their CUDA kernels sum a row in another order "
                        "than the CPU's; drop --exact")
    tensors = [p["name"] for p in params if p["type"] == "Tensor"]
    scalars = {p["name"] for p in params if p["type"] == "float"}
    other = next((p for p in params if p["type"] in ("int", "bool")), None)
    if other:
        raise SpecError(f"--signature {answers['signature']!r}: {other['name']!r} is {other['type']}, and "
                        "rowwise formulas take float scalars only; make it a float")

    settle_formula("columns", "the per-column tensors, shape (N,), e.g. 'weight, bias'")
    columns = [c.strip() for c in (answers.get("columns") or "").split(",") if c.strip()]
    for column in columns:
        if column not in tensors:
            raise SpecError(f"--columns {answers['columns']!r}: {column!r} is not a tensor argument of "
                            f"the signature ({', '.join(tensors)})")
    rows = [t for t in tensors if t not in columns]
    if not rows:
        raise SpecError(f"--columns {answers['columns']!r} names every tensor; a rowwise op needs a row "
                        "tensor, shape (..., N)")

    element_names = set(tensors) | scalars | {"n"}
    settle_formula("reductions", "per-row reductions, e.g. 'ms = mean(x * x)'")
    if "reductions" not in answers:
        raise SpecError("--reductions is needed without --preset: e.g. 'ms = mean(x * x)', or pass "
                        f"--preset ({', '.join(PRESETS)})")
    reductions = parse_reductions("--reductions", answers["reductions"], element_names)
    if not reductions:
        raise SpecError("--reductions is empty; a rowwise op reduces each row at least once "
                        "(an op without reductions is elementwise)")
    forward_names = element_names | {r["name"] for r in reductions}
    settle_formula("forward", "C++ expression for one output element")
    if "forward" not in answers:
        raise SpecError("--forward is needed with --reductions: a C++ expression over the element, the "
                        "reductions, n and the scalars")
    # Several outputs are named ('y: ...; h: ...'); one is its expression alone.
    outputs = parse_outputs(answers["forward"], forward_names, set(tensors))
    # The outputs with the rows' shape, which have gradients; per-row outputs have none.
    row_outputs = [o for o in outputs if not o.get("per_row")]
    per_row_names = {o["name"] for o in outputs if o.get("per_row")}
    forward = None if outputs else cpp_formula("--forward", answers["forward"], forward_names)
    if forward and not forward.used & set(tensors):
        raise SpecError(f"--forward {answers['forward']!r} reads no tensor, so it is one value a row; a "
                        "rowwise op returns an output over the rows' elements, with per-row outputs beside "
                        "it if you name them: 'y: <expression over x>; lse: <expression>'")
    # The reference spells the same op in PyTorch: another spelling keeps the formulas' defaults.
    settle("reference", base.get("reference"), "the same op as a PyTorch expression")
    if "reference" not in answers:
        raise SpecError("--reference is needed with your own formulas: the op in PyTorch over whole "
                        "tensors, e.g. 'x / x.norm(dim=-1, keepdim=True)'")
    answers["reference"] = check_python_expression("reference", answers["reference"], set(tensors) | scalars)

    forwards = ({f"forward_{o['name']}": o["cpp"] for o in row_outputs} if outputs
                else {"forward": forward.cpp})
    kept = kept_term(reductions, forwards, forward_names)

    grad_reductions: list[dict[str, str]] = []
    grads: list[dict[str, str]] = []
    non_differentiable: list[str] = []
    backward_from_output = False
    backward_outputs: list[str] = []
    if answers["backward"]:
        # One output: its value is y and its gradient grad; several: each its own name and
        # grad_<name>.
        backward_names = forward_names | ({"grad", "y"} if not outputs else
                                          {o["name"] for o in row_outputs} | {f"grad_{o['name']}" for o in row_outputs})
        settle_formula("grad_reductions",
                       "per-row reductions of the backward, over grad and y, e.g. 'gy = sum(grad * y)'")
        check_no_per_row_outputs("--grad-reductions", answers.get("grad_reductions") or "", per_row_names)
        output_names = tuple(o["name"] for o in row_outputs) or ("y",)
        grad_reductions = parse_reductions("--grad-reductions", answers.get("grad_reductions") or "",
                                           backward_names, {r["name"]: r["stage"] for r in reductions},
                                           output_names)
        settle_formula("gradients", "'input: C++ expression' per tensor input, ';'-separated")
        if "gradients" not in answers:
            raise SpecError("--gradients is needed with your own formulas: 'x: <expression over grad, y, "
                            "the reductions>' per row tensor, 'weight: <expression summed over rows>' per "
                            f"column tensor, or 'name: {NON_DIFFERENTIABLE}'; or --no-backward")
        check_no_per_row_outputs("--gradients", answers["gradients"], per_row_names)
        names = backward_names | {r["name"] for r in grad_reductions}
        # What carries the outputs' gradients: grad (grad_<output>), and the backward's
        # reductions that read it.
        incoming = {"grad"} if not outputs else {f"grad_{o['name']}" for o in row_outputs}
        for r in grad_reductions:
            if any(re.search(rf"\b{name}\b", r["expression"]) for name in incoming):
                incoming.add(r["name"])
        grads, non_differentiable = parse_gradients(answers["gradients"], params, names, incoming)
        # A row tensor whose gradient formula is an earlier one's, letter for letter (x and
        # the residual added to it), shares that gradient: the backward computes it once and
        # autograd passes it to both, as torch's add does (torch ABI; the stable ABI's
        # backward computes each).
        first_with = {}
        for g in grads:
            if g["input"] in rows:
                if g["cpp"] in first_with:
                    g["same_as"] = first_with[g["cpp"]]
                else:
                    first_with[g["cpp"]] = g["input"]
        # Where no backward formula reads a tensor or the forward's reductions (softmax:
        # y * (grad - gy)), the forward saves its output and the backward reads y and grad
        # alone: it recomputes none of the forward, so its own reductions start at stage 0.
        # That y is the output as stored, rounded to its dtype, as PyTorch's own softmax
        # backward reads it. A formula that takes a column back out of y (softmax(x) + b:
        # y - b) would lose the small difference to bfloat16's rounding (seen: a gradient
        # off by 100% in bfloat16), so one reading a column recomputes y in float instead.
        forward_only = set(tensors) | {r["name"] for r in reductions}
        formulas = [g["formula"] for g in grads] + [r["expression"] for r in grad_reductions]
        used = set().union(*(cpp_formula("", text, names).used for text in formulas))
        # (Not for several outputs: they save the outputs their backward reads, below.)
        backward_from_output = not outputs and not used & forward_only
        if backward_from_output:
            grad_reductions = parse_reductions("--grad-reductions", answers.get("grad_reductions") or "",
                                               backward_names - forward_only, {})
        else:
            # Otherwise the forward saves its reductions (torch ABI: one float per row and
            # reduction) and the backward reads them instead of reducing the rows again: its
            # own reductions then start at stage 0 ("saved_stage"); "stage" is where they
            # come after the forward's, for the stable ABI's backward, which computes them
            # again (its autograd is Python's, around the op as the user calls it).
            if SAVED_REDUCTIONS in {p["name"] for p in params}:
                raise SpecError(f"--signature {answers['signature']!r}: {SAVED_REDUCTIONS!r} is the "
                                "name of the forward's saved reductions in the backward op; rename "
                                "the argument")
            saved = parse_reductions("--grad-reductions", answers.get("grad_reductions") or "",
                                     backward_names, {r["name"]: -1 for r in reductions}, output_names)
            for reduction, saved_reduction in zip(grad_reductions, saved, strict=True):
                reduction["saved_stage"] = saved_reduction["stage"]
            # With several outputs, where the backward's formulas read outputs and no row
            # tensor (a fused add + RMSNorm's read h = x + residual, not x and residual), the
            # forward saves those outputs and the backward reads them in place of the rows:
            # fewer bytes, as torch's own backward reads a saved output. Rounded to the dtype
            # as stored, as for y above.
            if outputs and not used & set(rows):
                backward_outputs = [o["name"] for o in row_outputs if o["name"] in used]
        count = (len(row_outputs) or 1) + len(tensors) + len(scalars)
        if count > MOST_ARGUMENTS:
            raise SpecError(f"--signature {answers['signature']!r}: the backward op would take {count} "
                            f"arguments and a PyTorch op takes at most {MOST_ARGUMENTS}")
    return {"preset": preset, "columns": columns, "reductions": reductions,
            "forward": answers["forward"], **({"outputs": outputs} if outputs else
                                              {"forward_cpp": forward.cpp, "forward_body": forward.body}),
            "grad_reductions": grad_reductions,
            "gradients": grads, "non_differentiable": non_differentiable,
            "backward_from_output": backward_from_output,
            **({"backward_outputs": backward_outputs} if backward_outputs else {}),
            **({"kept_term": kept} if kept else {})}


def options(record: dict[str, Any]) -> dict[str, Any]:
    """The command-line answers of the fields settle() records."""
    given: dict[str, Any] = {"columns": ", ".join(record["columns"]),
                             "reductions": reductions_text(record["reductions"]),
                             "forward": record["forward"]}
    if record.get("preset"):
        given["preset"] = record["preset"]
    if record["gradients"]:
        given["grad_reductions"] = reductions_text(record["grad_reductions"])
        given["gradients"] = gradients_text(record["gradients"], record["non_differentiable"])
    return given
