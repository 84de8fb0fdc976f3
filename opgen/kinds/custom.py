"""custom: the kernel is yours; everything around it is generated and keeps upgrading.

An op of this kind has a signature of typed tensors (`index: Tensor[int64]`, `x:
Tensor[float, 2]`) and int, float and bool scalars, and returns one or more tensors, each
with a shape rule (`like x`, or a tuple of sizes such as `(index.size(0), x.size(1))`).
opgen generates the schema, the checks that follow from the signature (device, dtype,
number of dimensions), the outputs' allocation, the device guard and stream, the dtype
dispatch, fake kernels from the shape rules, autograd, tests and a benchmark. The user
writes three files that `copier update` never touches (copier.yml's `_skip_if_exists`):
the CUDA kernels (csrc/<op>_cuda.cuh), the CPU code (csrc/<op>_cpu.h) and the PyTorch
reference with the tests' inputs (<package>/_<op>_reference.py). opgen writes a first
version of each that agree with one another, so the project builds and passes its tests.
"""

from __future__ import annotations

import ast
import keyword
import re
from typing import Any

from ..naming import CPP_KEYWORDS
from ..spec import (
    FLOAT_DTYPES,
    MOST_ARGUMENTS,
    SpecError,
    canonical_signature,
    check_backward_dtypes,
)
from ..spec import parse_signature as parse_plain_signature

NAME = "custom"
SUMMARY = ("your own kernel over typed tensors and scalars, outputs with shape rules "
           "(a gather, a scan, a histogram); the rest is generated")
DEFAULTS: dict[str, Any] = {
    "signature": "x: Tensor, index: Tensor[int64], scale: float = 1.0",
    "returns": "out: (index.size(0), x.size(1))",
    "backward": False,
}
OPTIONS = frozenset({"returns", "gradients"})
# Its glue and Python API have stable-ABI versions (templates/kinds/custom/stable/): opgen new
# --abi stable. The user's code is the same for both.
STABLE_ABI = True
# No --out-dtype (each output's dtype comes from --returns): not asked on a terminal.
ASKS_OUT_DTYPE = False
NOT_INLINE = "its kernel, CPU code and reference are files of their own that updates never touch"

# Tensor[...] dtypes of their own: (ATen, C++, torch). A tensor without one takes the op's
# dtype (--dtypes), dispatched at run time; "float" is that, restricted to floating dtypes.
FIXED_DTYPES = {
    "int64": ("at::kLong", "int64_t", "torch.int64"),
    "int32": ("at::kInt", "int32_t", "torch.int32"),
    "int16": ("at::kShort", "int16_t", "torch.int16"),
    "int8": ("at::kChar", "int8_t", "torch.int8"),
    "uint8": ("at::kByte", "uint8_t", "torch.uint8"),
    "bool": ("at::kBool", "bool", "torch.bool"),
    "float32": ("at::kFloat", "float", "torch.float32"),
    "float64": ("at::kDouble", "double", "torch.float64"),
}
OP_FLOAT = "float"
# The kernels see a tensor's sizes in a fixed array (TensorArg in csrc/<op>_kernel.h).
MAX_DIMS = 8
_SIGNATURE_CHARS = re.compile(r"[A-Za-z0-9_ .:,=+\-*/\[\]]+")
_RETURNS_CHARS = re.compile(r"[A-Za-z0-9_ .:,;()+\-*/]+")
# Names the generated code of every custom op uses beside the arguments' and outputs':
# the backward op's gradients are grad_<output>.
GRAD_PREFIX = "grad_"


def parse_signature(signature: str) -> list[dict[str, Any]]:
    """'x: Tensor[float, 2], index: Tensor[int64], k: int = 3' -> [{name, type, default}, ...],
    tensors with `dtype` (None: the op's; 'float': the op's, floating; or a fixed dtype) and
    `ndim` (None: any number of dimensions, at most MAX_DIMS)."""
    if not _SIGNATURE_CHARS.fullmatch(signature or " "):
        bad = sorted({c for c in signature if not _SIGNATURE_CHARS.fullmatch(c)})
        raise SpecError(f"--signature {signature!r} contains {''.join(bad)!r}; write 'name: Tensor', "
                        "'name: Tensor[int64, 1]' and 'name: float = 1.0', comma-separated")
    code = f"def f({signature}): pass"
    try:
        arguments = ast.parse(code).body[0].args.args
    except (SyntaxError, IndexError, AttributeError):
        arguments = None  # the plain parser below says what is wrong
    brackets: dict[str, str] = {}
    for arg in arguments or []:
        if isinstance(arg.annotation, ast.Subscript):
            base = arg.annotation.value
            if not (isinstance(base, ast.Name) and base.id == "Tensor"):
                raise SpecError(f"--signature {signature!r}: {arg.arg!r} has type "
                                f"{ast.unparse(arg.annotation)}; only Tensor takes [dtype, ndim], "
                                "e.g. 'index: Tensor[int64, 1]'")
            brackets[arg.arg] = ast.get_source_segment(code, arg.annotation.slice) or ""
    plain = re.sub(r"Tensor\s*\[[^\[\]]*\]", "Tensor", signature)
    if "[" in plain or "]" in plain:
        raise SpecError(f"--signature {signature!r} has a '[' or ']' outside 'Tensor[dtype, ndim]'; "
                        "write e.g. 'index: Tensor[int64, 1]'")
    try:
        params = parse_plain_signature(plain)
    except SpecError as error:
        raise SpecError(f"--{error}") from None
    for p in params:
        if p["type"] == "Tensor":
            p["dtype"], p["ndim"] = _tensor_type(signature, p["name"], brackets.get(p["name"]))
    if not any(p["type"] == "Tensor" and p["dtype"] in (None, OP_FLOAT) for p in params):
        raise SpecError(f"--signature {signature!r}: every tensor has a dtype of its own; the op's "
                        "dtype (--dtypes, scalar_t in your kernels) comes from its first tensor "
                        "without one: add one, e.g. 'x: Tensor'")
    return params


def _tensor_type(signature: str, name: str, text: str | None) -> tuple[str | None, int | None]:
    """The dtype and ndim of 'Tensor[int64, 1]' (text is what the brackets hold)."""
    if text is None:
        return None, None
    dtype, ndim = None, None
    example = f"write e.g. '{name}: Tensor[int64, 1]', '{name}: Tensor[float]' or '{name}: Tensor[2]'"
    for item in (part.strip() for part in text.split(",")):
        if re.fullmatch(r"[0-9]+", item):
            if ndim is not None:
                raise SpecError(f"--signature {signature!r}: {name}: Tensor[{text}] gives two numbers "
                                "of dimensions; give one")
            if int(item) > MAX_DIMS:
                raise SpecError(f"--signature {signature!r}: {name}: Tensor[{text}] gives {item} "
                                f"dimensions; a tensor argument may have at most {MAX_DIMS}")
            ndim = int(item)
        elif item in FIXED_DTYPES or item == OP_FLOAT:
            if dtype is not None:
                raise SpecError(f"--signature {signature!r}: {name}: Tensor[{text}] gives two dtypes; "
                                f"give one, {example}")
            dtype = item
        elif item in ("float16", "bfloat16"):
            raise SpecError(f"--signature {signature!r}: {name}: Tensor[{item}]: half-precision tensors "
                            f"take the op's dtype; write '{name}: Tensor' and pass --dtypes {item}")
        else:
            raise SpecError(f"--signature {signature!r}: {name}: Tensor[{text}]: {item!r} is neither a "
                            f"dtype ({', '.join([OP_FLOAT, *FIXED_DTYPES])}) nor a number of "
                            f"dimensions; {example}")
    return dtype, ndim


def signature_text(params: list[dict[str, Any]]) -> str:
    """The signature as parse_signature reads it back: 'index: Tensor[int64, 1]'."""
    pieces = []
    for p in params:
        items = [str(x) for x in (p.get("dtype"), p.get("ndim")) if x is not None]
        typed = [{**p, "type": f"Tensor[{', '.join(items)}]"}] if p["type"] == "Tensor" and items else [p]
        pieces.append(canonical_signature(typed))
    return ", ".join(pieces)


class _Rule:
    """One shape rule's tuple: each size checked, spelled in Python and in C++."""

    def __init__(self, what: str, params: list[dict[str, Any]]):
        self.what = what
        self.tensors = {p["name"]: p for p in params if p["type"] == "Tensor"}
        self.ints = {p["name"] for p in params if p["type"] == "int"}
        self.others = {p["name"]: p["type"] for p in params if p["type"] in ("float", "bool")}
        self.dims: dict[str, int] = {}  # tensor -> the dimensions the rule needs it to have
        self.floor_divides = False

    def fail(self, node: ast.AST, problem: str) -> SpecError:
        return SpecError(f"{self.what}: {ast.unparse(node)} {problem}; a size is built from "
                         "t.size(d), t.numel(), int arguments and integers with + - * //, "
                         "e.g. (index.size(0), x.size(1))")

    def cpp(self, node: ast.AST) -> str:
        """The C++ of a size, over `in.<tensor>` and `s.<int scalar>`; checks it as it goes."""
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return str(node.value)
        if isinstance(node, ast.Name):
            if node.id in self.ints:
                return f"s.{node.id}"
            if node.id in self.others:
                return _raise(self.fail(node, f"is a {self.others[node.id]} argument, not an int"))
            if node.id in self.tensors:
                return _raise(self.fail(node, "is a tensor; take one of its sizes, e.g. "
                                              f"{node.id}.size(0)"))
            return _raise(self.fail(node, "is not an argument of the signature"))
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = self.cpp(node.left), self.cpp(node.right)
            if isinstance(node.op, ast.FloorDiv):
                self.floor_divides = True
                return f"floor_divide({left}, {right})"
            precedence = _OPERATORS[type(node.op)][1]
            if _precedence(node.left) < precedence:
                left = f"({left})"
            if _precedence(node.right) <= precedence:
                right = f"({right})"
            return f"{left} {_OPERATORS[type(node.op)][0]} {right}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and not node.keywords:
            tensor, method = node.func.value.id, node.func.attr
            if tensor not in self.tensors:
                return _raise(self.fail(node, f"reads {tensor!r}, which is not a tensor argument"))
            if method == "numel" and not node.args:
                return f"in.{tensor}.numel()"
            if method == "size" and len(node.args) == 1:
                dim = _integer(node.args[0])
                if dim is None:
                    return _raise(self.fail(node, "needs a dimension that is an integer"))
                ndim = self.tensors[tensor]["ndim"]
                needs = dim + 1 if dim >= 0 else -dim
                if ndim is not None and needs > ndim:
                    return _raise(self.fail(node, f"reads dimension {dim} of {tensor}, which has "
                                                  f"{ndim} (Tensor[..., {ndim}] in --signature)"))
                if ndim is None:  # else the check of its declared ndim covers it
                    self.dims[tensor] = max(self.dims.get(tensor, 0), needs)
                return f"in.{tensor}.size({dim})"
        return _raise(self.fail(node, "is not a size"))


_OPERATORS = {ast.Add: ("+", 1), ast.Sub: ("-", 1), ast.Mult: ("*", 2), ast.FloorDiv: ("//", 3)}


def _precedence(node: ast.AST) -> int:
    return _OPERATORS[type(node.op)][1] if isinstance(node, ast.BinOp) and not \
        isinstance(node.op, ast.FloorDiv) else 9


def _integer(node: ast.AST) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _integer(node.operand)
        return None if value is None else -value
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _raise(error: SpecError) -> str:
    raise error


def parse_returns(text: str, params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """'out: (index.size(0), x.size(1)); mask: like x' -> [{name, rule, like, shape, shape_cpp,
    dtype, ndim, dims, floor_divides}], checked against the signature's `params`."""
    if not text.strip():
        raise SpecError("--returns is empty; give each output and its shape, e.g. 'out: like x' or "
                        "'out: (index.size(0), x.size(1))'")
    if not _RETURNS_CHARS.fullmatch(text):
        bad = sorted({c for c in text if not _RETURNS_CHARS.fullmatch(c)})
        raise SpecError(f"--returns {text!r} contains {''.join(bad)!r}; write 'name: like x' or "
                        "'name: (sizes...)', ';'-separated")
    names = {p["name"] for p in params}
    tensors = {p["name"]: p for p in params if p["type"] == "Tensor"}
    outputs: list[dict[str, Any]] = []
    for piece in (piece.strip() for piece in text.split(";")):
        name, colon, rule = (part.strip() for part in piece.partition(":"))
        if not colon or not rule:
            raise SpecError(f"--returns {text!r}: {piece!r} needs the form 'name: like x' or "
                            "'name: (sizes...)', e.g. 'out: (index.size(0), x.size(1))'")
        what = f"--returns {name}: {rule}"
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise SpecError(f"{what}: the output name {name!r} must be lower snake case, e.g. out")
        if keyword.iskeyword(name) or name in CPP_KEYWORDS or name == "torch":
            raise SpecError(f"{what}: the output name {name!r} is a Python or C++ name; rename it")
        if name in names:
            raise SpecError(f"{what}: {name!r} is already an argument or output; name the output "
                            "otherwise")
        names.add(name)
        like = re.fullmatch(r"like\s+([a-z][a-z0-9_]*)", rule)
        if like:
            source = tensors.get(like.group(1))
            if source is None:
                raise SpecError(f"{what}: {like.group(1)!r} is not a tensor argument "
                                f"({', '.join(tensors)}); write 'like <tensor>'")
            outputs.append({"name": name, "rule": f"like {source['name']}", "like": source["name"],
                            "shape": None, "shape_cpp": None, "dtype": source["dtype"],
                            "ndim": source["ndim"], "dims": [], "floor_divides": False})
            continue
        # A dtype of its own before the sizes ('int64 (x.size(0), k)'); else the op's dtype.
        dtype = None
        typed = re.fullmatch(r"([a-z][a-z0-9]*)\s*(\(.*)", rule)
        if typed:
            dtype, rule = typed.groups()
            if dtype not in FIXED_DTYPES:
                raise SpecError(f"{what}: {dtype!r} is not a dtype an output may have "
                                f"({', '.join(FIXED_DTYPES)}); write e.g. 'int64 (x.size(0),)', "
                                "or the sizes alone for the op's dtype")
        try:
            tree = ast.parse(rule, mode="eval").body
        except SyntaxError:
            tree = None
        if not isinstance(tree, ast.Tuple):
            raise SpecError(f"{what}: a shape is 'like <tensor>' or a tuple of sizes, e.g. "
                            "(index.size(0), x.size(1)), or (n,) for one dimension, optionally "
                            "after a dtype of its own: int64 (n,)")
        if len(tree.elts) > MAX_DIMS:
            raise SpecError(f"{what}: {len(tree.elts)} dimensions; the kernels take at most {MAX_DIMS}")
        shape_rule = _Rule(what, params)
        shape_cpp = [shape_rule.cpp(size) for size in tree.elts]
        outputs.append({"name": name, "rule": ast.unparse(tree), "like": None,
                        "shape": [ast.unparse(size) for size in tree.elts], "shape_cpp": shape_cpp,
                        "dtype": dtype, "ndim": len(tree.elts),
                        "dims": [{"tensor": t, "dims": d} for t, d in shape_rule.dims.items()],
                        "floor_divides": shape_rule.floor_divides})
    return outputs


def returns_text(outputs: list[dict[str, Any]]) -> str:
    def rule(o: dict[str, Any]) -> str:
        return f"{o['dtype']} {o['rule']}" if o["dtype"] and not o["like"] else o["rule"]

    return "; ".join(f"{o['name']}: {rule(o)}" for o in outputs)


def settle(answers: dict[str, Any], settle, params: list[dict[str, Any]],
           given: set[str]) -> dict[str, Any]:
    if answers.get("reference") is not None:
        raise SpecError(f"--reference {answers['reference']!r}: a custom op's reference is Python you "
                        "write, in <package>/_<op>_reference.py (opgen writes a first one that "
                        "matches the first kernels); drop --reference")
    answers["reference"] = None
    if answers["out_dtype"] != "same":
        raise SpecError(f"--out-dtype {answers['out_dtype']}: a custom op's outputs take their dtypes "
                        "from --returns ('like x' is x's dtype, a tuple the op's); drop --out-dtype")
    floating = [p["name"] for p in params if p.get("dtype") == OP_FLOAT]
    if floating and any(d not in FLOAT_DTYPES for d in answers["dtypes"]):
        raise SpecError(f"--dtypes {','.join(answers['dtypes'])}: {floating[0]} is Tensor[float], "
                        f"which takes the floating dtypes only ({', '.join(FLOAT_DTYPES)}); drop "
                        "the others, or make it a plain Tensor")
    # Defaults belong to the default signature: another one needs its own shapes.
    settle("returns", DEFAULTS["returns"] if answers["signature"] == signature_text(
        parse_signature(DEFAULTS["signature"])) else None,
        "each output and its shape, ';'-separated, e.g. 'out: like x; idx: int64 (x.size(0), k)'")
    if "returns" not in answers:
        raise SpecError(f"--signature {answers['signature']!r} was given without --returns; name each "
                        "output and its shape, e.g. --returns 'out: like x' or "
                        "'out: (index.size(0), x.size(1))'")
    outputs = parse_returns(answers["returns"], params)
    if "gradients" in answers:
        answers["backward"] = True  # --gradients x is the backward's only question
    gradients: list[dict[str, str]] = []
    if answers["backward"]:
        settle("gradients", None, "the tensors that get gradients, e.g. 'x'")
        if not answers.get("gradients"):
            raise SpecError("a backward needs --gradients, the tensor inputs that get gradients, e.g. "
                            "--gradients 'x'; or pass --no-backward")
        check_backward_dtypes(answers)
        gradients = _parse_gradients(answers["gradients"], params, outputs, answers["signature"])
    return {"returns": outputs, "gradients": gradients, "non_differentiable": []}


def _parse_gradients(text: str, params: list[dict[str, Any]], outputs: list[dict[str, Any]],
                     signature: str) -> list[dict[str, str]]:
    """'x, weight' -> [{input: x}, {input: weight}], in the signature's order."""
    tensors = {p["name"]: p for p in params if p["type"] == "Tensor"}
    names = [name.strip() for name in text.split(",")]
    for name in names:
        if name not in tensors:
            raise SpecError(f"--gradients {text!r}: {name!r} is not a tensor argument "
                            f"({', '.join(tensors)}); name the tensors that get gradients, e.g. "
                            f"'{next(iter(tensors))}'")
        if tensors[name]["dtype"] not in (None, OP_FLOAT):
            raise SpecError(f"--gradients {text!r}: {name} is Tensor[{tensors[name]['dtype']}], and only "
                            "tensors of the op's (floating) dtype get gradients")
        if names.count(name) > 1:
            raise SpecError(f"--gradients {text!r}: {name!r} is given twice")
    differentiable = [o["name"] for o in outputs if o["dtype"] in (None, OP_FLOAT)]
    if not differentiable:
        raise SpecError(f"--gradients {text!r}: no output has the op's dtype (each is 'like' a tensor "
                        "of a dtype of its own), so no gradient flows; pass --no-backward")
    clash = next((p["name"] for p in params if p["name"] in {GRAD_PREFIX + o for o in differentiable}),
                 None)
    if clash:
        raise SpecError(f"--signature {signature!r}: argument {clash!r} is also the name of the "
                        f"backward op's gradient of output {clash[len(GRAD_PREFIX):]!r}; rename one")
    count = len(differentiable) + len(params)
    if count > MOST_ARGUMENTS:
        raise SpecError(f"--gradients {text!r}: the backward op would take {count} arguments (a "
                        f"gradient per output and every argument), and a PyTorch op takes at most "
                        f"{MOST_ARGUMENTS}")
    return [{"input": name} for name in tensors if name in names]


def options(record: dict[str, Any]) -> dict[str, Any]:
    """The command-line answers of the fields settle() records."""
    given = {"returns": returns_text(record["returns"])}
    if record["gradients"]:
        given["gradients"] = ", ".join(g["input"] for g in record["gradients"])
    return given
