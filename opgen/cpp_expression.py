"""Parse the C++ expressions users give (forward and gradient formulas), check them, and
write them out twice: as the C++ the kernels compile, and as the same op in PyTorch.

The formulas are pasted into `return ...;` in a header compiled for the CPU and by nvcc,
where every floating argument has the type acc_t (float, or double for float64), integer
scalars are int64_t and truth values bool. An expression that would not compile there,
or would compile into something else than it reads, is refused here, before anything is
rendered, with the reason: the comma operator, integer-only operators (`%`, `<<`, `>>`,
`&`, `|`, `^`, `~`) on floating values, `/` between two integers (C++ truncates, Python
does not), comparisons chained without parentheses (`0 < x < 1`: C++ compares the truth
value of `0 < x` with 1, Python tests both pairs), a call of something that is not a math
function or with the wrong number of arguments.

What users write is what they mean, so the C++ written out differs from the text in
five ways: numeric literals become acc_t values (`0.5` is a double in C++, and one double
makes a float kernel compute in double: twice as slow on a GPU); the float-suffixed C
names become the generic ones (`expf` -> `exp`), which are overloaded for float and double;
integers and truth values that meet floating values become acc_t (`x * acc_t(n)`); a
condition on floating values picks with `where(c, a, b)` instead of `c ? a : b`; and `a / b`
becomes `divide(a, b)`, which the GPU computes for floats as torch.compile's kernels do (an
approximation within 2 ulp: IEEE's division branches on every element).

The last two let the same text compute 16 values at once: on a CPU with AVX2, acc_t is
Lanes<float> (csrc/cpu_lanes.h), where a comparison of floating values gives a mask, not a
bool, and C++'s `?:` cannot take a mask. Values that are the same in every lane (int and
bool scalars, and what is computed from them alone) stay plain C++ values with `?:`.

The grammar is C++'s for these operators, with its precedence and associativity:

    conditional := or ('?' conditional ':' conditional)?
    or := and ('||' and)* ... down to ...
    unary := ('+' | '-' | '!' | '~') unary | postfix
    postfix := NAME '(' arguments ')' | NAME | NUMBER | '(' conditional ')'
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field, replace

# Math functions that exist for float and double on the host (<cmath>) and on the device
# (CUDA's math library), with how many arguments each takes. rsqrt (1 / sqrt, one GPU
# instruction) is CUDA's; min, max and clamp (NaN in, NaN out, as torch.minimum, maximum and
# clamp) are not C's: the generated math headers define all three, and rsqrt for the host.
MATH_FUNCTIONS: dict[str, int] = {
    **dict.fromkeys("""abs fabs exp exp2 expm1 log log2 log10 log1p sqrt rsqrt cbrt sin cos tan asin acos
        atan sinh cosh tanh asinh acosh atanh erf erfc tgamma lgamma floor ceil round rint nearbyint
        trunc""".split(), 1),
    **dict.fromkeys("pow hypot atan2 fmod fmax fmin copysign min max".split(), 2),
    "fma": 3,
    "clamp": 3,
}
# Math functions that cost tens of instructions per value (a polynomial, a series): where a
# formula calls them, each element takes about ten times longer than an add.
COSTLY_FUNCTIONS = frozenset("""exp exp2 expm1 log log2 log10 log1p cbrt sin cos tan asin acos atan
    sinh cosh tanh asinh acosh atanh erf erfc tgamma lgamma pow hypot atan2 fmod""".split())
# The functions whose value is exact or correctly rounded in C's library and in CUDA's alike
# (IEEE's sqrt and fma; the rest never round): the only ones --exact ops may call, with pow of
# an integer exponent up to 16 (multiplications, csrc/<op>_math.h). The others differ in the
# last bit between the CPU and the GPU (on an H200: exp, log1p, tanh, rsqrt and pow(x, 0.5)).
EXACT_FUNCTIONS = frozenset("""abs fabs floor ceil trunc rint nearbyint round fmin fmax min max clamp
    copysign fmod sqrt fma""".split())
# The float-suffixed C names (expf, fminf, ...): the same functions, written generically.
SUFFIXED = {f"{name}f": name for name in MATH_FUNCTIONS if name not in ("abs", "min", "max", "clamp")}
# acc_t(...) converts to the accumulation type: acc_t(0.5) keeps float math in float.
CAST = "acc_t"
# The functions the C++ of a formula calls for what the user wrote, which the generated math
# headers define: divide(a, b) for `a / b`, where(c, a, b) for a condition on floats.
DIVIDE, WHERE = "divide", "where"

# What each value is, for the operators' sake: a floating value (the arguments, math
# results), a truth value (comparisons, bool scalars) or an integer (int scalars, literals).
FLOAT, BOOL, INT = "a floating value", "a truth value", "an integer"

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fF]?)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op>\|\||&&|==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^?:(),])
""", re.VERBOSE)

# Binary operators by precedence, loosest first, as C++ ranks them.
_BINARY_LEVELS = [["||"], ["&&"], ["|"], ["^"], ["&"], ["==", "!="], ["<", ">", "<=", ">="],
                  ["<<", ">>"], ["+", "-"], ["*", "/", "%"]]
_INTEGER_ONLY = {"%", "<<", ">>", "~"}
_BITWISE = {"&", "|", "^"}  # on truth values too: (x > 0) & (x < 1)
_COMPARISON = {"==", "!=", "<", ">", "<=", ">="}
_LOGICAL = {"&&", "||"}

# C math functions and the torch function of the same meaning, for the PyTorch reference.
# rint and nearbyint round halves to even, as torch.round does. Not here, so that a formula
# using them needs a reference of the user's: round (C rounds halves away from zero),
# tgamma and cbrt (no torch function).
_TORCH_FUNCTIONS = {**{name: name for name in """abs exp exp2 expm1 log log2 log10 log1p sqrt rsqrt
    sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh erf erfc lgamma floor ceil trunc
    pow hypot atan2 fmod fmax fmin copysign""".split()}, "fabs": "abs", "rint": "round",
    "nearbyint": "round"}
# Where torch takes a Python number for an argument (by position); elsewhere a number is
# made a float64 tensor first.
_NUMBER_ARGUMENTS = {"pow": (0, 1), "fmod": (1,), "copysign": (1,)}
_FLOAT64_NUMBER = "torch.as_tensor({}, dtype=torch.float64)"


class ExpressionError(ValueError):
    """The expression cannot be used; the message says why (without naming the answer)."""


def _check_integer_literal(where: str, value: int) -> None:
    """An integer C++ can hold: a larger one is cut to 64 bits there, and Python keeps it whole."""
    if value >= 2**63:
        raise ExpressionError(f"{where} is larger than C++'s largest integer (2**63 - 1), which would "
                              f"cut it to 64 bits; write it as a floating number, {value}.0")


def _check_floating_literal(where: str, number: str) -> None:
    """A number a double holds: beyond it C++ warns and makes it inf or 0, and so does Python."""
    value = float(number)
    if math.isinf(value):
        raise ExpressionError(f"{where} is beyond a double's range (it would be inf); give a number up "
                              "to 1.7e308")
    if value == 0 and re.search(r"[1-9]", number.lower().split("e")[0]):
        raise ExpressionError(f"{where} is below a double's smallest number, 5e-324 (it would be 0); "
                              "write 0 or a larger number")


@dataclass
class Token:
    kind: str
    text: str
    position: int


@dataclass
class Node:
    """One value of the expression: what it is (FLOAT, BOOL, INT), the first tensor argument
    that flows into it, if one does (then it is a tensor in PyTorch, of that argument's dtype),
    and its C++ and PyTorch spellings (the PyTorch one None where the formula has no PyTorch
    twin; `why` says why)."""

    kind: str
    tensor: str | None
    cpp: str
    torch: str | None
    literal: str | None = None  # the number, for a bare numeric literal
    why: str | None = None
    # Whether the value differs from lane to lane where acc_t is Lanes: every floating value,
    # and truth values computed from them (masks); int and bool scalars do not.
    lanes: bool = False
    # For a comparison written without parentheses around it (`a < b`, not `(a < b)`), its
    # operands' and operators' source texts: another comparison of it reads as a chain in
    # Python.
    chain: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    def __post_init__(self):
        self.lanes = self.lanes or self.kind == FLOAT


@dataclass
class Formula:
    """A checked formula: the names it uses, its C++ (literals in acc_t) and its PyTorch
    twin (None, with the reason in `why_not_torch`, where there is none)."""

    cpp: str
    torch: str | None
    why_not_torch: str | None
    used: set[str] = field(default_factory=set)
    # The calls whose value the CPU and CUDA may round differently (not EXACT_FUNCTIONS).
    inexact: list[str] = field(default_factory=list)
    # The C++ as the body of a function: {"locals": [[name, C++], ...], "value": C++}, the
    # costly calls it makes more than once computed once (see shared_calls).
    body: dict = field(default_factory=dict)


def tokenize(expression: str) -> list[Token]:
    tokens, position = [], 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if not match:
            raise ExpressionError(f"{expression[position]!r} at position {position + 1} is not allowed "
                                  "in a formula")
        if match.lastgroup != "space":
            tokens.append(Token(match.lastgroup, match.group(), position))
        position = match.end()
    tokens.append(Token("end", "", position))
    return tokens


def _acc(node: Node) -> str:
    """The node's C++ as an acc_t value."""
    if node.literal is not None:
        return f"{CAST}({node.literal})"
    if node.kind == FLOAT:
        return node.cpp
    return f"{CAST}{node.cpp}" if _parenthesized(node.cpp) else f"{CAST}({node.cpp})"


def _parenthesized(cpp: str) -> bool:
    """Whether one pair of parentheses holds the whole of `cpp`: (a + b), not (a) + (b)."""
    if not cpp.startswith("("):
        return False
    depth = 0
    for index, character in enumerate(cpp):
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth == 0:
            return index == len(cpp) - 1
    return False


def _unparenthesized(text: str) -> str:
    """`text` without the parentheses that hold the whole of it: ((a > b)) -> a > b."""
    while _parenthesized(text):
        text = text[1:-1].strip()
    return text


def _lane_truth(node: Node) -> str:
    """The node as a truth value in C++ where it meets masks: a floating value is `!= 0`."""
    return f"({node.cpp} != {CAST}(0))" if node.kind == FLOAT else node.cpp


def _torch_argument(node: Node) -> str:
    """A value for a torch function that wants tensors: numbers become float64 tensors."""
    return node.torch if node.tensor else _FLOAT64_NUMBER.format(node.torch)


def _torch_number(node: Node, scalars: bool = True) -> str:
    """The node's PyTorch spelling where C++ makes it a number (acc_t): a truth value becomes
    0 or 1 first, in the dtype of the tensor it compares (float64 in the tests: an int tensor
    would make torch.exp of it float32), since torch refuses `-` on bool tensors and bool
    numbers and adds two bool tensors as `or` (True + True is True there, 2 in C++). A bool
    scalar only where `scalars`: Python's own arithmetic takes it as 0 or 1, as in `x * flag`."""
    if node.kind != BOOL or not (node.tensor or scalars):
        return node.torch
    return f"({node.torch}).to({node.tensor}.dtype)" if node.tensor else f"(1 if {node.torch} else 0)"


def _truth(node: Node) -> str:
    """The node as a truth value in PyTorch, as C++'s && and || read it: a number as `!= 0`.
    Python's `and` returns an operand (`3 and 2` is 2) and torch's `&` is bitwise (`True & 2`
    is 0), where C++'s && gives true."""
    return node.torch if node.kind == BOOL else f"({node.torch} != 0)"


def _spanned(method):
    """Records the tokens each value of the expression spans, and where `substitutions` names
    a span, puts that name in place of the value's C++ (see given_conditions)."""

    def wrapper(self, *arguments):
        start = self.index
        node = method(self, *arguments)
        span = (start, self.index)
        if span in self.substitutions:
            node = Node(BOOL, node.tensor, self.substitutions[span], None, lanes=True)
        self.spans.append((span, node))
        return node

    return wrapper


class _Parser:
    def __init__(self, expression: str, names: dict[str, str], tensors: set[str],
                 substitutions: dict[tuple[int, int], str] | None = None):
        self.expression = expression
        self.tokens = tokenize(expression)
        self.index = 0
        self.names = names
        self.tensors = tensors
        self.used: set[str] = set()
        self.inexact: list[str] = []
        self.substitutions = substitutions or {}
        self.spans: list[tuple[tuple[int, int], Node]] = []

    @property
    def token(self) -> Token:
        return self.tokens[self.index]

    def take(self, text: str | None = None) -> Token:
        token = self.token
        if text is not None and token.text != text:
            found = f"{token.text!r}" if token.text else "the end"
            raise ExpressionError(f"expected {text!r} at position {token.position + 1}, found {found}")
        self.index += 1
        return token

    def parse(self) -> Node:
        if self.token.kind == "end":
            raise ExpressionError("it is empty")
        node = self.conditional()
        if self.token.text == ",":
            raise ExpressionError("it uses the comma operator, which throws away its left side; "
                                  "give one expression")
        if self.token.kind != "end":
            raise ExpressionError(f"{self.token.text!r} at position {self.token.position + 1} does not "
                                  f"continue the expression{_python_hint(self.token.text)}")
        return node

    @_spanned
    def conditional(self) -> Node:
        condition = self.binary(0)
        if self.token.text != "?":
            return condition
        self.take("?")
        if_true = self.conditional()
        self.take(":")
        if_false = self.conditional()
        if condition.lanes:
            # A mask picks lane by lane (both sides computed, as torch.where does).
            kind = FLOAT
            cpp = f"{WHERE}({_lane_truth(condition)}, {_acc(if_true)}, {_acc(if_false)})"
        else:
            # A mask (a comparison of floating values) meeting an integer in ?: would become a
            # mask too where acc_t is Lanes (4 read as true: 1): both branches acc_t then.
            masks = if_true.lanes or if_false.lanes
            # Otherwise C++'s common type: a truth value meeting an integer is an integer.
            kind = (FLOAT if FLOAT in (if_true.kind, if_false.kind) or masks
                    else INT if INT in (if_true.kind, if_false.kind) else BOOL)
            if kind == FLOAT:
                branches = _acc(if_true), _acc(if_false)
            else:
                branches = if_true.cpp, if_false.cpp
            cpp = f"{condition.cpp} ? {branches[0]} : {branches[1]}"
        lanes = kind == FLOAT or if_true.lanes or if_false.lanes
        tensor = condition.tensor or if_true.tensor or if_false.tensor
        if None in (condition.torch, if_true.torch, if_false.torch):
            return Node(kind, tensor, cpp, None, why=_why(condition, if_true, if_false), lanes=lanes)
        if kind != BOOL:  # C++ made each branch acc_t or an integer: a truth value 0 or 1
            if_true = replace(if_true, torch=_torch_number(if_true))
            if_false = replace(if_false, torch=_torch_number(if_false))
        if condition.tensor:
            # torch.where of two numbers would be float32; one float64 tensor keeps float64.
            true_value = if_true.torch if if_true.tensor or if_false.tensor else _torch_argument(if_true)
            torch_text = f"torch.where({_truth(condition)}, {true_value}, {if_false.torch})"
        elif bool(if_true.tensor) != bool(if_false.tensor):
            # A number or a tensor, by the condition: a tensor either way, for the functions
            # around it that take tensors only (torch.clamp(2.5 if c else x, ...)).
            torch_text = f"({_torch_argument(if_true)} if {condition.torch} else {_torch_argument(if_false)})"
        else:
            torch_text = f"({if_true.torch} if {condition.torch} else {if_false.torch})"
        return Node(kind, tensor, cpp, torch_text, lanes=lanes)

    @_spanned
    def binary(self, level: int) -> Node:
        if level == len(_BINARY_LEVELS):
            return self.unary()
        start = self.token.position
        left = self.binary(level + 1)
        left_text = self.expression[start:self.token.position].strip()
        while self.token.text in _BINARY_LEVELS[level]:
            operator = self.take().text
            right_start = self.token.position
            right = self.binary(level + 1)
            right_text = self.expression[right_start:self.token.position].strip()
            if operator not in _COMPARISON:
                left = self.combine(operator, left, right)
                continue
            operands_left, operators_left = left.chain or ((left_text,), ())
            operands_right, operators_right = right.chain or ((right_text,), ())
            chain = (operands_left + operands_right, operators_left + (operator,) + operators_right)
            if left.chain or right.chain:
                # `0 < x < 1`: Python tests 0 < x and x < 1; C++ compares the truth value of
                # 0 < x (0 or 1) with 1. The same text means two things; refused, with both.
                operands, operators = chain
                pairs = " && ".join(f"({operands[i]} {operators[i]} {operands[i + 1]})"
                                    for i in range(len(operators)))
                raise ExpressionError(
                    f"'{self.expression[start:self.token.position].strip()}' chains comparisons, which "
                    "Python reads as a test of each pair and C++ as a comparison of the first one's truth "
                    f"value (0 or 1); write {pairs} for Python's, or parentheses around the comparison "
                    "made first")
            left = self.combine(operator, left, right)
            left.chain = chain
            left_text = self.expression[start:self.token.position].strip()
        return left

    def combine(self, operator: str, left: Node, right: Node) -> Node:
        kinds = (left.kind, right.kind)
        lanes = left.lanes or right.lanes
        if operator in _INTEGER_ONLY and (FLOAT in kinds or lanes):
            raise ExpressionError(f"'{operator}' needs integers, and the formula's values are "
                                  f"floating (acc_t){_hint(operator)}")
        if operator in _BITWISE and FLOAT in kinds:
            raise ExpressionError(f"'{operator}' is bitwise and needs integers or truth values, and "
                                  f"the formula's values are floating (acc_t){_hint(operator)}")
        if operator in _BITWISE and lanes and INT in kinds:
            raise ExpressionError(f"'{operator}' mixes an integer with a comparison of floating values; "
                                  f"compare the integer too{_hint(operator)}")
        literals = left.literal is not None or right.literal is not None
        if operator == "/" and kinds == (INT, INT) and not literals and not lanes:
            raise ExpressionError(f"'{left.cpp} / {right.cpp}' divides two integers, which C++ "
                                  f"truncates and Python does not; write acc_t({left.cpp}) / {right.cpp}")
        if operator in _LOGICAL and lanes:
            # Masks combine lane by lane; a plain int or bool is the same in every lane.
            cpp = f"{_lane_truth(left)} {operator} {_lane_truth(right)}"
            kind = BOOL
        elif operator in _BITWISE or operator in _INTEGER_ONLY or operator in _LOGICAL:
            cpp = f"{left.cpp} {operator} {right.cpp}"
            kind = BOOL if operator in _LOGICAL or kinds == (BOOL, BOOL) else INT
        elif operator == "/":
            # divide() (the generated math headers): as torch.compile divides floats on a GPU.
            cpp = f"{DIVIDE}({_unparenthesized(_acc(left))}, {_unparenthesized(_acc(right))})"
            kind = FLOAT
        elif FLOAT in kinds or lanes:
            # Integers and truth values meet floating values in acc_t; / of two integers would
            # truncate.
            cpp = f"{_acc(left)} {operator} {_acc(right)}"
            kind = BOOL if operator in _COMPARISON else FLOAT
        else:  # integers and truth values with each other: exact, as in Python
            cpp = f"{left.cpp} {operator} {right.cpp}"
            kind = BOOL if operator in _COMPARISON else INT
        tensor = left.tensor or right.tensor
        if left.torch is None or right.torch is None:
            return Node(kind, tensor, cpp, None, why=_why(left, right), lanes=lanes)
        if operator in ("%", "<<", ">>"):
            # Python's % and >> round toward minus infinity, C++'s % toward zero.
            return Node(kind, tensor, cpp, None, why=f"uses C++'s {operator!r}, which Python computes "
                        "differently for negative numbers", lanes=lanes)
        if operator in _LOGICAL:
            if tensor:
                python_operator = "&" if operator == "&&" else "|"
                torch_text = f"({_truth(left)}) {python_operator} ({_truth(right)})"
            else:
                torch_text = f"({_truth(left)}) {'and' if operator == '&&' else 'or'} ({_truth(right)})"
        elif operator in "+-*/":
            scalars = operator in "+-"  # torch subtracts no bool; a bool tensor + True is `or`
            torch_text = f"({_torch_number(left, scalars)}) {operator} ({_torch_number(right, scalars)})"
        else:
            torch_text = f"({left.torch}) {operator} ({right.torch})"
        return Node(kind, tensor, cpp, torch_text, lanes=lanes)

    @_spanned
    def unary(self) -> Node:
        if self.token.text in ("+", "-", "!", "~"):
            operator = self.take().text
            operand = self.unary()
            if operator == "~" and (operand.kind == FLOAT or operand.lanes):
                raise ExpressionError(f"'~' needs an integer, and the formula's values are floating "
                                      f"(acc_t){_hint('~')}")
            if operator == "~" and operand.kind == BOOL:
                raise ExpressionError("'~' flips every bit, which makes -1 or -2 of a truth value, "
                                      "not its negation; use ! for 'not'")
            if operator in "+-" and operand.lanes and operand.kind != FLOAT:
                # The sign of a comparison of floating values: 0 or 1 in acc_t first.
                operand = Node(FLOAT, operand.tensor, _acc(operand),
                               None if operand.torch is None else _torch_number(operand), why=operand.why)
            kind = BOOL if operator == "!" else INT if operand.kind == BOOL else operand.kind
            # -0.5 stays one number, written acc_t(-0.5) where it meets floating values; -(-2)
            # is 2 (the number "--2" would be C++'s decrement, which does not compile).
            literal = _signed(operator, operand.literal) if operand.literal and operator in "+-" else None
            signed = operand.cpp[:1] in ("+", "-")
            cpp = f"{operator}({operand.cpp})" if signed else f"{operator}{operand.cpp}"
            if operand.torch is None:
                return Node(kind, operand.tensor, cpp, None, literal, why=operand.why, lanes=operand.lanes)
            if operator == "!":
                torch_text = (f"torch.logical_not({operand.torch})" if operand.tensor
                              else f"(not ({operand.torch}))")
            else:
                torch_text = f"{operator}({operand.torch})"
            return Node(kind, operand.tensor, cpp, torch_text, literal, lanes=operand.lanes)
        return self.primary()

    @_spanned
    def primary(self) -> Node:
        token = self.take()
        if token.text == "(":
            node = self.conditional()
            if self.token.text == ",":
                raise ExpressionError("it uses the comma operator inside parentheses, which throws "
                                      "away its left side")
            self.take(")")
            literal = node.literal
            return Node(node.kind, node.tensor, f"({node.cpp})", node.torch, literal, node.why, node.lanes)
        if token.kind == "number":
            text = token.text
            where = f"{text!r} at position {token.position + 1}"
            if text.lower().startswith("0x"):
                _check_integer_literal(where, int(text, 16))
                return Node(INT, None, text, str(int(text, 16)), literal=text)
            number = text.rstrip("fF")
            if re.fullmatch(r"0+[0-9]+", number) and number.strip("0"):
                # C++ reads 017 as octal (15), Python refuses it: no reading is the user's.
                raise ExpressionError(f"{where} starts with 0, which makes an octal number in C++; "
                                      f"write {number.lstrip('0')}")
            kind = FLOAT if re.search(r"[.eE]", number) or number != text else INT
            if kind == INT:
                _check_integer_literal(where, int(number))
            else:
                _check_floating_literal(where, number)
            return Node(kind, None, text if kind == INT else f"{CAST}({number})", number, literal=number)
        if token.kind == "name":
            if self.token.text == "(":
                return self.call(token)
            if token.text in self.names:
                self.used.add(token.text)
                tensor = token.text if token.text in self.tensors else None
                return Node(self.names[token.text], tensor, token.text, token.text)
            if token.text in MATH_FUNCTIONS or token.text in SUFFIXED or token.text == CAST:
                raise ExpressionError(f"{token.text!r} is a function; call it, e.g. {token.text}(x)")
            raise ExpressionError(f"it uses {token.text!r}, which is neither an argument "
                                  f"({', '.join(sorted(self.names))}) nor a math function such as exp "
                                  f"or fmax{_python_hint(token.text)}")
        before = self.tokens[self.index - 2] if self.index >= 2 else None
        doubled = before and before.text == token.text and before.position == token.position - 1
        if token.text == "*" and doubled:
            raise ExpressionError(f"'**' at position {token.position} is Python's power; "
                                  "C++ writes pow(a, b)")
        if token.text == "/" and doubled:
            raise ExpressionError(f"'//' at position {token.position} is Python's floor division; "
                                  "C++ writes floor(a / b)")
        found = repr(token.text) if token.text else "the end"
        raise ExpressionError(f"{found} at position {token.position + 1} cannot start a value")

    @_spanned
    def call(self, function: Token) -> Node:
        name = SUFFIXED.get(function.text, function.text)
        if name != CAST and name not in MATH_FUNCTIONS:
            what = "an argument" if function.text in self.names else "not a math function"
            raise ExpressionError(f"it calls {function.text!r}, which is {what}; the functions are "
                                  f"{', '.join(sorted(MATH_FUNCTIONS))} and acc_t(...)")
        self.take("(")
        arguments: list[Node] = []
        if self.token.text != ")":
            while True:
                arguments.append(self.conditional())
                if self.token.text != ",":
                    break
                self.take(",")
        self.take(")")
        expected = 1 if name == CAST else MATH_FUNCTIONS[name]
        if len(arguments) != expected:
            plural = "s" if expected > 1 else ""
            raise ExpressionError(f"{function.text}() takes {expected} argument{plural}, "
                                  f"not {len(arguments)}")
        tensor = next((a.tensor for a in arguments if a.tensor), None)
        if name == CAST:
            (argument,) = arguments
            inner = argument.literal if argument.literal is not None else argument.cpp
            return Node(FLOAT, tensor, f"{CAST}({inner})", argument.torch, why=argument.why)
        integer_power = (name == "pow" and arguments[1].kind == INT and arguments[1].literal is not None)
        if name not in EXACT_FUNCTIONS and not (integer_power and abs(int(arguments[1].literal, 0)) <= 16):
            self.inexact.append(f"{function.text}()")
        # Every argument in acc_t, so that the float overload is the one called; but an
        # integer power stays one (multiplications, csrc/<op>_math.h).
        spelled = [a.literal if name == "pow" and i == 1 and a.kind == INT and a.literal else _acc(a)
                   for i, a in enumerate(arguments)]
        cpp = f"{name}({', '.join(spelled)})"
        if any(a.torch is None for a in arguments):
            return Node(FLOAT, tensor, cpp, None, why=_why(*arguments))
        torch_text, why = _torch_call(name, arguments)
        return Node(FLOAT, tensor, cpp, torch_text, why=why)


def _torch_call(name: str, arguments: list[Node]) -> tuple[str | None, str | None]:
    """The PyTorch spelling of a math function call, or None and why there is none."""
    # C++ passes truth values as acc_t numbers; torch has no abs or clamp of bool tensors.
    arguments = [replace(a, torch=_torch_number(a)) for a in arguments]
    if name in ("min", "max"):
        a, b = arguments
        elementwise = f"torch.{'minimum' if name == 'min' else 'maximum'}"
        if a.tensor and b.tensor:
            return f"{elementwise}({a.torch}, {b.torch})", None
        if not (a.tensor or b.tensor) and FLOAT in (a.kind, b.kind):
            # Python's min and max let a NaN through or not by its place; C++'s (above) do.
            return f"{elementwise}({_torch_argument(a)}, {_torch_argument(b)})", None
        if not (a.tensor or b.tensor):
            return f"{name}({a.torch}, {b.torch})", None
        tensor, number = (a, b) if a.tensor else (b, a)
        bound = "max" if name == "min" else "min"
        return f"torch.clamp({tensor.torch}, {bound}={number.torch})", None
    if name == "clamp":
        value, low, high = arguments
        if bool(low.tensor) != bool(high.tensor):  # torch.clamp takes two numbers or two tensors
            low_text, high_text = _torch_argument(low), _torch_argument(high)
        else:
            low_text, high_text = low.torch, high.torch
        return f"torch.clamp({_torch_argument(value)}, {low_text}, {high_text})", None
    if name == "fma":
        a, b, c = (x.torch for x in arguments)
        return f"({a}) * ({b}) + ({c})", None
    if name not in _TORCH_FUNCTIONS:
        if name == "round":
            return None, ("calls round, which torch computes differently (torch.round rounds halves to "
                          "even, as rint does)")
        return None, f"calls {name}, which torch has no function for"
    numbers_taken = _NUMBER_ARGUMENTS.get(name, ()) if any(a.tensor for a in arguments) else ()
    if name == "pow":  # torch.pow(number, number) is refused; a float64 base is not
        numbers_taken = (1,) if not arguments[0].tensor and not arguments[1].tensor else numbers_taken
    spelled = [a.torch if a.tensor or i in numbers_taken else _torch_argument(a)
               for i, a in enumerate(arguments)]
    return f"torch.{_TORCH_FUNCTIONS[name]}({', '.join(spelled)})", None


def _signed(operator: str, literal: str) -> str:
    """The number `literal` with the sign `operator` (+ or -) applied: - of -2 is 2."""
    sign, digits = (literal[0], literal[1:]) if literal[0] in "+-" else ("+", literal)
    return ("-" if (operator == "-") != (sign == "-") else "") + digits


def _why(*nodes: Node) -> str | None:
    return next((n.why for n in nodes if n.why), None)


def _hint(operator: str) -> str:
    return {"%": "; use fmod(a, b)", "&": "; use && for 'and'", "|": "; use || for 'or'",
            "^": "; use pow(a, b) for powers", "<<": "; multiply by a power of two instead",
            ">>": "; divide by a power of two instead", "~": ""}[operator]


def _python_hint(word: str) -> str:
    """What C++ writes for a word of Python's that a formula used, for the error message."""
    return {"if": "; a Python conditional: C++ writes condition ? a : b",
            "else": "; a Python conditional: C++ writes condition ? a : b",
            "and": "; C++ writes && for 'and'", "or": "; C++ writes || for 'or'",
            "not": "; C++ writes ! for 'not'"}.get(word, "")


def parse(expression: str, names: dict[str, str] | set[str], tensors: set[str] | frozenset[str] = frozenset()
          ) -> Formula:
    """Check `expression` over `names` (name -> FLOAT, INT or BOOL; a set: all FLOAT), of which
    `tensors` are tensor arguments, and write it out in C++ and in PyTorch.

    Raises ExpressionError saying what is wrong.
    """
    if not isinstance(names, dict):
        names = dict.fromkeys(names, FLOAT)
    parser = _Parser(expression, names, set(tensors))
    node = parser.parse()
    torch_text = node.torch
    if torch_text is not None:
        if node.literal is not None and not node.tensor:
            torch_text = node.literal
        try:
            torch_text = ast.unparse(ast.parse(torch_text, mode="eval"))  # no needless parentheses
        except SyntaxError as error:  # what the checks above let through and Python refuses
            raise ExpressionError(f"as Python ({torch_text}) it does not parse: {error.msg}") from None
    # The formulas return acc_t: a truth value or an integer becomes one explicitly, which a
    # mask (Lanes) needs.
    cpp = _acc(node)
    return Formula(cpp, torch_text, None if torch_text is not None else node.why, parser.used,
                   parser.inexact, shared_calls(cpp, names))


def costly_calls(cpp: str) -> int:
    """How many calls of COSTLY_FUNCTIONS the C++ of a formula makes."""
    return sum(name in COSTLY_FUNCTIONS for name in re.findall(r"\b(\w+)\(", cpp))


def body_calls(body: dict) -> int:
    """How many calls of COSTLY_FUNCTIONS a formula's body (shared_calls) makes."""
    return sum(costly_calls(cpp) for cpp in [*(cpp for _, cpp in body["locals"]), body["value"]])


_COSTLY_CALL = re.compile(r"(?<![\w.])(" + "|".join(sorted(COSTLY_FUNCTIONS)) + r")\(")


def _calls(cpp: str) -> list[str]:
    """The text of every call of a COSTLY_FUNCTION in `cpp`, nested ones too."""
    found = []
    for match in _COSTLY_CALL.finditer(cpp):
        depth = 0
        for index in range(match.end() - 1, len(cpp)):
            depth += {"(": 1, ")": -1}.get(cpp[index], 0)
            if depth == 0:
                found.append(cpp[match.start():index + 1])
                break
    return found


def is_one_costly_call(cpp: str) -> bool:
    """Whether the C++ of a formula is, as a whole, one call of a COSTLY_FUNCTION
    (`exp(x - m)`, not `exp(x) + 1` nor `x - m`)."""
    return _calls(cpp)[:1] == [cpp]


def with_call_named(cpp: str, call: str, name: str) -> str:
    """`cpp` with each call `call` (the text of a whole call, as `_calls` finds them) read
    from the variable `name` instead."""
    return re.sub(r"(?<![\w.])" + re.escape(call), name, cpp)


def shared_calls(cpp: str, taken: set[str] | dict[str, str]) -> dict:
    """`cpp` as a function body whose costly calls made more than once with the same
    arguments are made once, into locals: {"locals": [[name, C++], ...], "value": C++}.

    The tanh GELU's gradient, as users write it, calls tanh three times on one argument;
    written out, it reads as one would write it by hand (one tanh), and the estimate of an
    element's cost (kinds/elementwise.cpu_grain) counts one call, not three. (GCC merged the
    three calls itself in the CPU loops: the CPU benchmark's times did not change.) Locals are named after the
    function (`tanh_0`), never one of `taken` (the function's arguments), each after the
    locals it reads. Math functions have no side effects, so computing one that a condition
    would have skipped changes no result.
    """
    body_locals: list[list[str]] = []
    value = cpp
    while True:
        texts = [text for _, local in body_locals for text in _calls(local)] + _calls(value)
        repeated = [text for text in dict.fromkeys(texts) if texts.count(text) > 1]
        if not repeated:
            return {"locals": body_locals, "value": value}
        # The innermost first: a call that holds no other repeated call. Locals made before
        # cannot hold it (it would have been repeated in them), so it goes last.
        text = next(t for t in repeated if not any(other != t and other in t for other in repeated))
        function = text[:text.index("(")]
        used = {name for name, _ in body_locals} | set(taken)
        name = next(f"{function}_{k}" for k in range(len(used) + 1) if f"{function}_{k}" not in used)
        value = with_call_named(value, text, name)
        body_locals.append([name, text])



@dataclass
class Condition:
    """A truth value a gradient formula computes from the tensors (not from grad): its C++
    over acc_t and its text as the user wrote it."""

    cpp: str
    text: str


def given_conditions(expression: str, names: dict[str, str], tensors: set[str] | frozenset[str],
                     conditions: list[Condition]) -> str | None:
    """The C++ of a gradient formula that reads the tensors only through conditions (relu's
    `x > 0 ? grad : 0`), written over those conditions as `condition_<k>` (k: their place in
    `conditions`, to which new ones are added), or None where it reads a tensor otherwise.

    Such a gradient needs one bit of each tensor element per condition, not the element:
    the forward can save the bits instead of the inputs. A condition is a largest truth value
    of floating values that reads a tensor and not grad: in `(x > lo && x < hi) ? grad : 0`
    the whole `x > lo && x < hi`.
    """
    parser = _Parser(expression, names, set(tensors))
    parser.parse()
    tokens = parser.tokens

    def reads(span: tuple[int, int], wanted: set[str] | frozenset[str]) -> bool:
        return any(tokens[i].kind == "name" and tokens[i].text in wanted for i in range(*span))

    candidates = {span: node for span, node in parser.spans
                  if node.kind == BOOL and node.lanes and reads(span, tensors) and not reads(span, {"grad"})}
    largest = sorted(span for span in candidates
                     if not any(other != span and other[0] <= span[0] and span[1] <= other[1]
                                for other in candidates))
    covered = {i for start, end in largest for i in range(start, end)}
    if any(tokens[i].kind == "name" and tokens[i].text in tensors and i not in covered
           for i in range(len(tokens))):
        return None
    substitutions = {}
    for span in largest:
        cpp = _unparenthesized(candidates[span].cpp)
        if cpp not in [c.cpp for c in conditions]:
            last = tokens[span[1] - 1]
            text = _unparenthesized(expression[tokens[span[0]].position:last.position + len(last.text)])
            conditions.append(Condition(cpp, text))
        substitutions[span] = f"condition_{[c.cpp for c in conditions].index(cpp)}"
    return _acc(_Parser(expression, names, set(tensors), substitutions).parse())
