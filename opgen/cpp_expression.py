"""Parse the C++ expressions users give (forward and gradient formulas) and check them.

The formulas are pasted into `return ...;` in a header compiled for the CPU and by nvcc,
where every argument is a floating value of type acc_t (float, or double for float64).
An expression that would not compile there, or would compile into something else than it
reads, is refused here, before anything is rendered, with the reason: the comma operator,
integer-only operators (`%`, `<<`, `>>`, `&`, `|`, `^`, `~`) on floating values, a call of
something that is not a math function or with the wrong number of arguments.

The grammar is C++'s for these operators, with its precedence and associativity:

    conditional := or ('?' conditional ':' conditional)?
    or := and ('||' and)* ... down to ...
    unary := ('+' | '-' | '!' | '~') unary | postfix
    postfix := NAME '(' arguments ')' | NAME | NUMBER | '(' conditional ')'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Math functions that exist for float and double on the host (<cmath>) and on the device
# (CUDA's math library), with how many arguments each takes. rsqrt (1 / sqrt, one GPU
# instruction) is CUDA's; the generated math headers define it for the host.
MATH_FUNCTIONS: dict[str, int] = {
    **dict.fromkeys("""abs fabs exp exp2 expm1 log log2 log10 log1p sqrt rsqrt cbrt sin cos tan asin acos
        atan sinh cosh tanh asinh acosh atanh erf erfc tgamma lgamma floor ceil round trunc""".split(), 1),
    **dict.fromkeys("pow hypot atan2 fmod fmax fmin copysign".split(), 2),
    "fma": 3,
}
# acc_t(...) converts to the accumulation type: acc_t(0.5) keeps float math in float.
CAST = "acc_t"

# What each value is, for the operators' sake: a floating value (the arguments, math
# results), a truth value (comparisons) or an integer (an integer literal).
FLOAT, BOOL, INT = "a floating value", "a truth value", "an integer"

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fF]?|0[xX][0-9a-fA-F]+)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op>\|\||&&|==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^?:(),])
""", re.VERBOSE)

# Binary operators by precedence, loosest first, as C++ ranks them.
_BINARY_LEVELS = [["||"], ["&&"], ["|"], ["^"], ["&"], ["==", "!="], ["<", ">", "<=", ">="],
                  ["<<", ">>"], ["+", "-"], ["*", "/", "%"]]
_INTEGER_ONLY = {"%", "<<", ">>", "~"}
_BITWISE = {"&", "|", "^"}  # on truth values too: (x > 0) & (x < 1)
_COMPARISON = {"==", "!=", "<", ">", "<=", ">=", "!", "&&", "||"}


class ExpressionError(ValueError):
    """The expression cannot be used; the message says why (without naming the answer)."""


@dataclass
class Token:
    kind: str
    text: str
    position: int


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


class _Parser:
    def __init__(self, expression: str, names: set[str]):
        self.tokens = tokenize(expression)
        self.index = 0
        self.names = names
        self.used: set[str] = set()

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

    def parse(self) -> str:
        if self.token.kind == "end":
            raise ExpressionError("it is empty")
        kind = self.conditional()
        if self.token.text == ",":
            raise ExpressionError("it uses the comma operator, which throws away its left side; "
                                  "give one expression")
        if self.token.kind != "end":
            raise ExpressionError(f"{self.token.text!r} at position {self.token.position + 1} does not "
                                  "continue the expression")
        return kind

    def conditional(self) -> str:
        condition = self.binary(0)
        if self.token.text != "?":
            return condition
        self.take("?")
        if_true = self.conditional()
        self.take(":")
        if_false = self.conditional()
        return FLOAT if FLOAT in (if_true, if_false) else if_true

    def binary(self, level: int) -> str:
        if level == len(_BINARY_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.token.text in _BINARY_LEVELS[level]:
            operator = self.take().text
            right = self.binary(level + 1)
            left = self.combine(operator, left, right)
        return left

    def combine(self, operator: str, left: str, right: str) -> str:
        if operator in _INTEGER_ONLY and FLOAT in (left, right):
            raise ExpressionError(f"'{operator}' needs integers, and the formula's values are "
                                  f"floating (acc_t){_hint(operator)}")
        if operator in _BITWISE and FLOAT in (left, right):
            raise ExpressionError(f"'{operator}' is bitwise and needs integers or truth values, and "
                                  f"the formula's values are floating (acc_t){_hint(operator)}")
        if operator in _COMPARISON:
            return BOOL
        return FLOAT if FLOAT in (left, right) else INT

    def unary(self) -> str:
        if self.token.text in ("+", "-", "!", "~"):
            operator = self.take().text
            operand = self.unary()
            if operator == "~" and operand == FLOAT:
                raise ExpressionError(f"'~' needs an integer, and the formula's values are floating "
                                      f"(acc_t){_hint('~')}")
            return BOOL if operator == "!" else operand
        return self.primary()

    def primary(self) -> str:
        token = self.take()
        if token.text == "(":
            kind = self.conditional()
            if self.token.text == ",":
                raise ExpressionError("it uses the comma operator inside parentheses, which throws "
                                      "away its left side")
            self.take(")")
            return kind
        if token.kind == "number":
            return FLOAT if re.search(r"[.eEfF]", token.text) and not token.text.lower().startswith("0x") \
                else INT
        if token.kind == "name":
            if self.token.text == "(":
                return self.call(token)
            if token.text in self.names:
                self.used.add(token.text)
                return FLOAT
            if token.text in MATH_FUNCTIONS or token.text == CAST:
                raise ExpressionError(f"{token.text!r} is a function; call it, e.g. {token.text}(x)")
            raise ExpressionError(f"it uses {token.text!r}, which is neither an argument "
                                  f"({', '.join(sorted(self.names))}) nor a math function such as exp "
                                  "or fmax")
        found = repr(token.text) if token.text else "the end"
        raise ExpressionError(f"{found} at position {token.position + 1} cannot start a value")

    def call(self, function: Token) -> str:
        name = function.text
        if name != CAST and name not in MATH_FUNCTIONS:
            what = "an argument" if name in self.names else "not a math function"
            raise ExpressionError(f"it calls {name!r}, which is {what}; the functions are "
                                  f"{', '.join(sorted(MATH_FUNCTIONS))} and acc_t(...)")
        self.take("(")
        count = 0
        if self.token.text != ")":
            while True:
                self.conditional()
                count += 1
                if self.token.text != ",":
                    break
                self.take(",")
        self.take(")")
        expected = 1 if name == CAST else MATH_FUNCTIONS[name]
        if count != expected:
            raise ExpressionError(f"{name}() takes {expected} argument{'s' if expected > 1 else ''}, "
                                  f"not {count}")
        return FLOAT


def _hint(operator: str) -> str:
    return {"%": "; use fmod(a, b)", "&": "; use && for 'and'", "|": "; use || for 'or'",
            "^": "; use pow(a, b) for powers", "<<": "; multiply by a power of two instead",
            ">>": "; divide by a power of two instead", "~": ""}[operator]


def check(expression: str, names: set[str]) -> set[str]:
    """Check `expression` over the floating values `names`; return the names it uses.

    Raises ExpressionError saying what is wrong.
    """
    parser = _Parser(expression, names)
    parser.parse()
    return parser.used
