"""One op's answers: the options given, the rest asked or defaulted, all checked, typed.

Everything is settled here, in Python, before copier renders anything: copier receives
the typed record of every op and asks nothing, so a refusal always comes before
rendering and names the answer the user gave (or the default that was taken for them).
The same function reads an op back from a project's recorded answers (opgen regen, add
and update), so there is one parser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .kinds import KIND_OPTIONS, KINDS
from .naming import name_problem
from .spec import (
    DTYPES,
    FLOAT_DTYPES,
    OUT_DTYPES,
    SpecError,
    canonical_signature,
    check_answer_text,
    check_dtypes,
    parse_dtypes,
    parse_signature,
)

# Ask(question, default, help) -> the answer as typed; None when nothing is asked.
Ask = Callable[[str, Any, str], Any]
# The answers of one op, as the command line spells them (`given` below).
OP_OPTIONS = ("kind", "signature", "reference", "backward", "dtypes", "out_dtype",
              *sorted(KIND_OPTIONS))


def collect_op(name: str, given: dict[str, Any], *, exact: bool = False,
               ask: Ask | None = None) -> dict[str, Any]:
    """The op `name`'s record: `given`, then asked (with `ask`) or defaulted, all checked.

    `given` holds command-line answers (OP_OPTIONS); `exact` is the project's. The record
    is what copier renders from and the answers file keeps: typed values (params, dtypes,
    gradients as lists), never strings for the template to split.
    """
    problem = name_problem(name)
    if problem:
        raise SpecError(problem)
    for key, value in given.items():
        check_answer_text(key, value)
    answers = {**given, "exact": exact}

    def settle(key: str, default: Any, help_text: str = "") -> None:
        if key in answers:
            return
        if ask is not None:
            answers[key] = ask(key, default, help_text)
        elif default is not None:
            answers[key] = default

    settle("kind", "elementwise", f"what the kernel computes ({', '.join(KINDS)})")
    if answers["kind"] not in KINDS:
        raise SpecError(f"kind {answers['kind']!r} is not one of {', '.join(KINDS)}")
    kind = KINDS[answers["kind"]]
    for key in sorted(KIND_OPTIONS - kind.OPTIONS):
        if key in answers:
            owners = ", ".join(k.NAME for k in KINDS.values() if key in k.OPTIONS)
            raise SpecError(f"--{key.replace('_', '-')} {answers[key]!r} does not apply to --kind "
                            f"{kind.NAME}: it is an option of --kind {owners}; drop it")
    # A kind may choose its defaults from what was given (rowwise: from --preset).
    defaults = kind.defaults(answers) if hasattr(kind, "defaults") else kind.DEFAULTS
    settle("signature", defaults["signature"],
           "the Python arguments, e.g. 'x: Tensor, alpha: float = 2.0'")
    # A kind may read a richer signature of its own (custom: 'index: Tensor[int64]').
    params = getattr(kind, "parse_signature", parse_signature)(answers["signature"])
    answers["signature"] = getattr(kind, "signature_text", canonical_signature)(params)
    if name in {p["name"] for p in params}:
        raise SpecError(f"--signature {answers['signature']!r}: an argument has the op's name "
                        f"{name!r}; rename it")
    settle("dtypes", list(FLOAT_DTYPES), f"comma-separated, from {','.join(DTYPES)}")
    if isinstance(answers["dtypes"], str):
        answers["dtypes"] = parse_dtypes(answers["dtypes"])
    check_dtypes(answers["dtypes"])
    if getattr(kind, "ASKS_OUT_DTYPE", True):
        settle("out_dtype", "same", "'same' as the inputs, or a dtype")
    answers.setdefault("out_dtype", "same")  # the kind refuses any other that was given
    if answers["out_dtype"] != "same" and answers["out_dtype"] not in OUT_DTYPES:
        raise SpecError(f"out_dtype {answers['out_dtype']!r} must be 'same' or one of {', '.join(OUT_DTYPES)}")
    settle("backward", defaults["backward"], "generate backward kernels and autograd?")
    fields = kind.settle(answers, settle, params, set(given))
    return {
        "name": name,
        "kind": kind.NAME,
        "params": params,
        "reference": answers["reference"],
        "backward": bool(answers["backward"]),
        "dtypes": list(answers["dtypes"]),
        "out_dtype": answers["out_dtype"],
        **fields,
    }


def options_of(record: dict[str, Any]) -> dict[str, Any]:
    """The command-line answers an op record was made from: collect_op(them) gives it back."""
    kind = KINDS[record["kind"]]
    given = {
        "kind": record["kind"],
        "signature": getattr(kind, "signature_text", canonical_signature)(record["params"]),
        "reference": record["reference"],
        "backward": record["backward"],
        "dtypes": record["dtypes"],
        "out_dtype": record["out_dtype"],
    }
    return {**given, **kind.options(record)}
