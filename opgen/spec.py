"""Validation of the answers an op is rendered from.

The template pastes these strings into C++, CUDA and Python source, so each one is
checked here first: an answer that would not compile, or that carries Jinja, shell or
preprocessor syntax, is refused with a one-line message before anything is written.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from typing import Any

from . import cpp_expression
from .naming import CPP_KEYWORDS

FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
DTYPES = (*FLOAT_DTYPES, "uint8", "uint16", "int32")
# An output may also be int8 (a quantizer's), which no kernel reads.
OUT_DTYPES = (*DTYPES, "int8")
ANNOTATIONS = ("Tensor", "float", "int", "bool")

MATH_FUNCTIONS = frozenset(cpp_expression.MATH_FUNCTIONS)

# The most arguments torch's dispatcher takes in one schema (DispatchKeyExtractor).
MOST_ARGUMENTS = 64

# Names the formulas themselves use, which an argument would hide: grad (the incoming
# gradient in --gradients), acc_t (the arithmetic type of csrc/<op>_math.h), torch (the
# module of the PyTorch references), the math functions, and the two functions the C++ of
# a formula calls for what the user wrote (divide for `/`, where for a condition on
# floats). Every other name is free: the generated C++ reaches the arguments only as
# members of structs (in.x, s.alpha) or as parameters of functions that declare nothing
# else, and tests/test_generated_project.py builds ops whose arguments take every name the
# generated code uses.
FORMULA_HELPERS = frozenset({cpp_expression.DIVIDE, cpp_expression.WHERE})
FORMULA_NAMES = frozenset({"grad", cpp_expression.CAST, "torch"}) | MATH_FUNCTIONS | FORMULA_HELPERS

# Characters an expression may hold: arithmetic, comparison, logic, the ternary, calls.
# No quotes, braces, brackets, semicolons, backslashes or '#': nothing that could end a
# statement or open Jinja, a string, a preprocessor line or a shell construct.
_CPP_CHARS = re.compile(r"[A-Za-z0-9_ .+\-*/%()<>=!&|^~?:,]+")
# Python references may also index (x[..., 0]) and multiply matrices (a @ b).
_PYTHON_CHARS = re.compile(r"[A-Za-z0-9_ .+\-*/%()<>=!&|^~?:,\[\]@'\"]+")
# A signature is names, the two types, ':', ',' and number defaults; '*' and '/' pass
# here only to be refused below with a clearer message.
_SIGNATURE_CHARS = re.compile(r"[A-Za-z0-9_ .:,=+\-*/]+")
# What no answer may hold, whatever it is: control characters (a newline in an answer ends
# a line of the C++ or Python it is pasted into) and what opens Jinja, a string, a comment,
# a preprocessor line or a shell substitution. Answers that parsing strips or splits (a
# gradient, a channel name) could otherwise smuggle them in. The expression checks below
# allow a shorter list still; '&' and '|' stay allowed there, where they are the C++ and
# PyTorch operators (x > 0 && x < 1, mask_a | mask_b) and every name must be an argument
# or a math function, so no command can follow them.
_NEVER = re.compile(r"[\x00-\x1f\x7f{}$`\\\"'#]")
_NEVER_IN_REFERENCES = re.compile(r"[\x00-\x1f\x7f{}$`\\#]")


class SpecError(ValueError):
    """An answer that cannot be rendered; the message says which and how to fix it."""


def parse_signature(signature: str) -> list[dict[str, Any]]:
    """'x: Tensor, alpha: float = 2.0' -> [{name, type, default}], validated.

    The same split the template does in copier.yml, with Python's parser behind it.
    """
    if not signature.strip():
        raise SpecError("signature is empty; give tensor and float arguments, e.g. 'x: Tensor'")
    if not _SIGNATURE_CHARS.fullmatch(signature):
        bad = sorted({c for c in signature if not _SIGNATURE_CHARS.fullmatch(c)})
        raise SpecError(f"signature {signature!r} contains {''.join(bad)!r}; write only "
                        "'name: Tensor' and 'name: float = number', comma-separated")
    try:
        code = f"def f({signature}): pass"
        function = ast.parse(code).body[0]
    except SyntaxError as error:
        raise SpecError(
            f"signature {signature!r} is not a Python argument list ({error.msg}); "
            "write it like 'x: Tensor, alpha: float = 2.0'"
        ) from None
    arguments = function.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs:
        raise SpecError("signature: only plain 'name: type' arguments are supported (Tensor, float, int, "
                        "bool)")
    params = []
    defaults = [None] * (len(arguments.args) - len(arguments.defaults)) + list(arguments.defaults)
    for arg, default in zip(arguments.args, defaults, strict=True):
        annotation = arg.annotation.id if isinstance(arg.annotation, ast.Name) else None
        if annotation not in ANNOTATIONS:
            raise SpecError(f"signature: argument {arg.arg!r} needs a type: Tensor, float, int or bool")
        _check_argument_name(arg.arg)
        default_value = None
        if default is not None:
            if annotation == "Tensor":
                raise SpecError(f"signature: tensor argument {arg.arg!r} cannot have a default")
            default_value = _parse_default(arg.arg, annotation, default, code)
        params.append({"name": arg.arg, "type": annotation, "default": default_value})
    names = [p["name"] for p in params]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SpecError(f"signature: argument {duplicates[0]!r} appears twice")
    if not any(p["type"] == "Tensor" for p in params):
        raise SpecError("signature has no tensor argument; add one, e.g. 'x: Tensor'")
    if len(params) > MOST_ARGUMENTS:
        raise SpecError(f"signature has {len(params)} arguments, and a PyTorch op takes at most "
                        f"{MOST_ARGUMENTS} (the dispatcher aborts at import otherwise); pass fewer, "
                        "e.g. several tensors stacked into one")
    return params


def _parse_default(name: str, annotation: str, node: ast.expr, code: str) -> float | int | bool:
    """A scalar argument's default: a finite float, an int or a bool, as Python writes it."""
    source = ast.get_source_segment(code, node) or ast.unparse(node)
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        value = None
    if annotation == "bool":
        if not isinstance(value, bool):
            raise SpecError(f"signature: the default of {name!r} is {source}, not True or False; "
                            f"write '{name}: bool = True'")
        return value
    # bool is an int to Python, and True is no number a user means as a default.
    if annotation == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"signature: the default of {name!r} is {source}, not an integer; "
                            f"write an integer, e.g. '{name}: int = 2'")
        if not -2**63 <= value < 2**63:
            raise SpecError(f"signature: the default of {name!r} is {source}, which is not a 64-bit "
                            "integer (a PyTorch int); give one between -2**63 and 2**63 - 1")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"signature: the default of {name!r} is {source}, not a number; "
                        f"write a number, e.g. '{name}: float = 2.0'")
    if not math.isfinite(value) or abs(value) > sys.float_info.max:
        raise SpecError(f"signature: the default of {name!r} is {source}, which is not a finite "
                        "double; give a number between -1.7e308 and 1.7e308")
    return float(value)


def canonical_signature(params: list[dict[str, Any]]) -> str:
    """The signature as opgen parsed it: 'x: Tensor, alpha: float = 16.0' for '... = 0x10'.

    This is what the template receives and the answers file records, so every file renders
    the value opgen checked, never a re-reading of the user's text.
    """
    return ", ".join(
        f"{p['name']}: {p['type']}" + (f" = {p['default']!r}" if p["default"] is not None else "")
        for p in params
    )


def _check_argument_name(name: str) -> None:
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise SpecError(f"signature: argument {name!r} must be lower snake case, e.g. x or alpha")
    if name in CPP_KEYWORDS:
        raise SpecError(f"signature: argument {name!r} is a C++ keyword; rename it")
    if name in FORMULA_NAMES:
        used = ("the incoming gradient in --gradients" if name == "grad" else
                "the arithmetic type of the formulas" if name == "acc_t" else
                "the module of the PyTorch references" if name == "torch" else
                "a function of the formulas" if name in FORMULA_HELPERS else
                "a math function of the formulas")
        raise SpecError(f"signature: argument {name!r} would hide {name}, {used}; rename it")


def _check_characters(what: str, text: str, allowed: re.Pattern) -> None:
    if not allowed.fullmatch(text):
        bad = sorted({c for c in text if not allowed.fullmatch(c)})
        raise SpecError(
            f"{what} {text!r} contains {''.join(bad)!r}; use arithmetic, comparisons, ?: and "
            "function calls only"
        )


def cpp_formula(what: str, expression: str, names: dict[str, str] | set[str],
                tensors: set[str] | frozenset[str] = frozenset()) -> cpp_expression.Formula:
    """A C++ expression over `names` (name -> cpp_expression.FLOAT, INT or BOOL; a set: all
    floating), of which `tensors` are tensors: checked, with its C++ and PyTorch spellings."""
    if not expression.strip():
        raise SpecError(f"{what} is empty; give an expression such as 'alpha * x'")
    _check_characters(what, expression, _CPP_CHARS)
    _check_parentheses(what, expression)
    try:
        return cpp_expression.parse(expression, names, tensors)
    except cpp_expression.ExpressionError as error:
        raise SpecError(f"{what} {expression!r}: {error}") from None


def check_cpp_expression(what: str, expression: str, names: dict[str, str] | set[str]) -> set[str]:
    """A C++ expression over `names` that compiles for float and double; the names it uses."""
    return cpp_formula(what, expression, names).used


def formula_names(params: list[dict[str, Any]]) -> dict[str, str]:
    """What each argument is in a formula: tensors and floats floating, ints integers."""
    kinds = {"Tensor": cpp_expression.FLOAT, "float": cpp_expression.FLOAT,
             "int": cpp_expression.INT, "bool": cpp_expression.BOOL}
    return {p["name"]: kinds[p["type"]] for p in params}


def check_python_expression(what: str, expression: str, names: set[str]) -> str:
    """A Python expression over `names` and torch, for the float64 reference; returns it as
    Python writes it (ast.unparse: one spelling, single quotes).

    The reference runs in the tests of the user's project, so it is read as an allow-list:
    arithmetic, comparisons, calls, indexing and literals; names are the arguments and torch;
    attributes are public (no '_'), in-place methods (ending in '_') are refused; a string
    only as the value of a keyword that takes a mode (approximate='tanh'), so that nothing
    can name a file, a module or a command.
    """
    if not expression.strip():
        raise SpecError(f"{what} is empty; give a PyTorch expression such as 'alpha * x'")
    _check_characters(what, expression, _PYTHON_CHARS)
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        hint = " (C++'s ?: is not Python: use torch.where)" if "?" in expression else ""
        raise SpecError(f"{what} {expression!r} is not a Python expression{hint}") from None
    string_values = {id(k.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
                     for k in node.keywords if k.arg in STRING_KEYWORDS}
    for node in ast.walk(tree):
        problem = _python_problem(node, names, string_values)
        if problem:
            raise SpecError(f"{what} {expression!r} {problem}")
    return ast.unparse(tree)


# Keywords of torch functions whose value is a mode named by a string.
STRING_KEYWORDS = frozenset({"approximate", "reduction", "mode", "rounding_mode", "padding_mode",
                             "norm", "side", "indexing", "interpolation", "ord"})
_PYTHON_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
                 ast.Call, ast.keyword, ast.Attribute, ast.Name, ast.Constant, ast.Subscript,
                 ast.Slice, ast.Tuple, ast.List, ast.expr_context, ast.operator, ast.unaryop,
                 ast.boolop, ast.cmpop)
# The modules of torch whose functions a reference may call (and torch's own).
_TORCH_MODULES = frozenset({"nn.functional", "special", "linalg", "fft"})
# Functions of torch itself that write files or change torch's state for everything after.
_TORCH_SIDE_EFFECTS = frozenset({"save", "load", "from_file", "compile", "export", "seed",
                                 "manual_seed"})


def _python_problem(node: ast.AST, names: set[str], string_values: set[int]) -> str | None:
    """What is wrong with one node of a reference, or None."""
    if not isinstance(node, _PYTHON_NODES):
        return f"uses {type(node).__name__.lower()} syntax; a reference is one expression of arithmetic, " \
               "comparisons, calls and indexing"
    if isinstance(node, ast.Name) and node.id not in names and node.id != "torch":
        return f"uses {node.id!r}, which is neither an argument ({', '.join(sorted(names))}) nor torch"
    if isinstance(node, ast.Attribute):
        if node.attr.startswith("_"):
            return f"reaches {node.attr!r}; only public attributes, not ones starting with '_'"
        if node.attr.endswith("_"):
            return f"calls {node.attr!r}, which changes its tensor in place; use {node.attr[:-1]!r}"
        path = _dotted(node)
        if path and path[0] == "torch" and ".".join(path[1:]) not in _TORCH_MODULES | {"nn"}:
            module = ".".join(path[1:-1])
            if module and module not in _TORCH_MODULES:
                return f"reaches {'.'.join(path)}; use torch's functions, torch.nn.functional's, " \
                       "torch.special's, torch.linalg's or torch.fft's"
            if not module and (path[-1] in _TORCH_SIDE_EFFECTS or path[-1].startswith(("set_", "use_"))):
                return f"calls torch.{path[-1]}, which reads or writes files or torch's settings"
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) \
            and id(node) not in string_values:
        return f"holds the string {node.value!r}; strings are allowed only as the value of a mode " \
               f"keyword ({', '.join(sorted(STRING_KEYWORDS))}), e.g. approximate='tanh'"
    return None


def _dotted(node: ast.AST) -> list[str] | None:
    """['torch', 'nn', 'functional', 'gelu'] for torch.nn.functional.gelu; None if not names."""
    path = []
    while isinstance(node, ast.Attribute):
        path.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(path)]


def parentheses_balance(text: str) -> bool:
    """Whether every ')' closes a '(' before it and every '(' is closed."""
    depth = 0
    for c in text:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


def _check_parentheses(what: str, expression: str) -> None:
    if not parentheses_balance(expression):
        raise SpecError(f"{what} {expression!r} has unbalanced parentheses")


# What --gradients says of a tensor input that no gradient flows to ('mask: non_differentiable').
NON_DIFFERENTIABLE = "non_differentiable"


def parse_gradients(gradients: str, params: list[dict[str, Any]], names: set[str] | None = None,
                    incoming: set[str] | frozenset[str] = frozenset({"grad"})
                    ) -> tuple[list[dict[str, Any]], list[str]]:
    """'x: alpha * grad; m: non_differentiable' -> ([{input, formula, cpp, reads}], ['m']), validated.

    Every tensor input needs a formula, or `non_differentiable`: an input left out would get
    no gradient (None) without a word. `reads` lists the tensor inputs a formula reads: the
    ones autograd saves for the backward kernel. The formulas may use `names` (default: the
    arguments and grad), and each must read one of `incoming` (the names that carry the
    output's gradient) or be 0: a gradient is the output's gradient times a derivative, and
    'x: cos(x)' for sin(x) builds, then fails every gradient test.
    """
    tensors = [p["name"] for p in params if p["type"] == "Tensor"]
    if names is None:
        names = {**formula_names(params), "grad": cpp_expression.FLOAT}
    elif not isinstance(names, dict):
        names = dict.fromkeys(names, cpp_expression.FLOAT)
    grads, declared, non_differentiable = [], [], []
    for piece in filter(str.strip, gradients.split(";")):
        if ":" not in piece:
            raise SpecError(
                f"gradients: {piece.strip()!r} needs the form 'input: expression', e.g. 'x: alpha * grad'"
            )
        name, expression = (part.strip() for part in piece.split(":", 1))
        if name not in tensors:
            raise SpecError(
                f"gradients: {name!r} is not a tensor argument of the signature ({', '.join(tensors)})"
            )
        if name in declared:
            raise SpecError(f"gradients: {name!r} is given twice")
        declared.append(name)
        if expression == NON_DIFFERENTIABLE:
            non_differentiable.append(name)
            continue
        formula = cpp_formula(f"gradient of {name}", expression, names)
        if not formula.used & set(incoming) and not _is_zero(expression):
            carriers = " or ".join(sorted(incoming))
            example = next((n for n in sorted(incoming) if n.startswith("grad")), min(incoming))
            raise SpecError(
                f"gradients: {name!r}: {expression!r} does not read {carriers}: a gradient is the output's "
                f"gradient times the derivative, e.g. '{name}: {example} * ({expression})'; or write "
                f"'{name}: {NON_DIFFERENTIABLE}' if no gradient flows to it"
            )
        grads.append({"input": name, "formula": expression, "cpp": formula.cpp, "body": formula.body,
                      "reads": [t for t in tensors if t in formula.used]})
    missing = [name for name in tensors if name not in declared]
    if missing:
        raise SpecError(
            f"gradients {gradients.strip()!r} has no formula for {missing[0]!r}: give "
            f"'{missing[0]}: <expression using grad>', or '{missing[0]}: {NON_DIFFERENTIABLE}' if no "
            "gradient flows to it"
        )
    if not grads:
        raise SpecError(
            "gradients: no input is differentiable; give 'input: expression' for one, or use --no-backward"
        )
    # In the signature's order, whatever order they were given in.
    grads.sort(key=lambda g: tensors.index(g["input"]))
    non_differentiable.sort(key=tensors.index)
    return grads, non_differentiable


def _is_zero(expression: str) -> bool:
    """Whether expression is a literal zero ('0', '0.0', 'acc_t(0)'): a gradient that is 0."""
    literal = re.sub(r"^acc_t\((.*)\)$", r"\1", expression.strip().replace(" ", ""))
    try:
        return float(literal.rstrip("fF")) == 0
    except ValueError:
        return False


def gradients_text(grads: list[dict[str, Any]], non_differentiable: list[str]) -> str:
    """The --gradients text of parsed gradients: what parse_gradients reads back the same."""
    pieces = [f"{g['input']}: {g['formula']}" for g in grads]
    pieces += [f"{name}: {NON_DIFFERENTIABLE}" for name in non_differentiable]
    return "; ".join(pieces)


def check_answer_text(key: str, value: Any) -> None:
    """Refuse control characters and Jinja, string, comment or shell syntax in an answer.

    A reference may hold quotes: check_python_expression allows strings in it only as
    keyword values, and it is pasted only into Python, as ast.unparse writes it.
    """
    never = _NEVER_IN_REFERENCES if key == "reference" else _NEVER
    for text in value if isinstance(value, list) else [value]:
        if isinstance(text, str) and never.search(text):
            bad = sorted(set(never.findall(text)))
            raise SpecError(f"{key} {text!r} contains {''.join(bad)!r}; no answer may hold control "
                            "characters, quotes, braces, '$', '`', '\\' or '#'")


def check_backward_dtypes(answers: dict[str, Any]) -> None:
    """Backward kernels need floating inputs and an output of their dtype."""
    dtypes = answers.get("dtypes", list(FLOAT_DTYPES))
    out_dtype = answers.get("out_dtype", "same")
    if out_dtype != "same" or any(d not in FLOAT_DTYPES for d in dtypes):
        given = f"--out-dtype {out_dtype}" if out_dtype != "same" else f"--dtypes {','.join(dtypes)}"
        raise SpecError(f"{given}: backward kernels need floating inputs and an output of the same "
                        "dtype; pass --no-backward, or choose floating --dtypes and no --out-dtype")


def check_dtypes(dtypes: list[str]) -> None:
    if not dtypes or len(set(dtypes)) != len(dtypes) or any(d not in DTYPES for d in dtypes):
        raise SpecError(f"dtypes {','.join(dtypes)!r}: choose distinct names from "
                        f"{','.join(DTYPES)}, comma-separated")


def parse_dtypes(text: str) -> list[str]:
    """'float32, float16' -> ['float32', 'float16'] (validated with the other answers)."""
    return [d.strip() for d in text.split(",") if d.strip()]
