"""The answers of `opgen new`: the options given, the rest asked or defaulted, all checked.

Everything is settled here, in Python, before copier renders anything: copier receives
every answer and asks nothing, so a refusal always comes before rendering and names the
answer the user gave (or the default that was taken for them).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .spec import (
    DTYPES,
    FLOAT_DTYPES,
    KINDS,
    SpecError,
    canonical_signature,
    check_answer_text,
    check_backward_dtypes,
    check_cpp_expression,
    check_dtypes,
    check_matmul_answers,
    check_pixel_answers,
    check_python_expression,
    parse_dtypes,
    parse_signature,
    validate_answers,
)

# What each kind starts from, so that `opgen new NAME --kind KIND --defaults` is a working op.
KIND_DEFAULTS: dict[str, dict[str, Any]] = {
    "elementwise": {
        "signature": "x: Tensor, alpha: float = 2.0",
        "forward": "alpha * x",
        "gradients": "x: alpha * grad",
        "backward": True,
    },
    "pixel": {
        "channels": "r, g, b",
        "signature": "img: Tensor",
        "forward": "0.299f * r + 0.587f * g + 0.114f * b",
        "reference": "0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]",
        "backward": False,  # pixel ops have no backward kernels yet
    },
    "matmul": {"signature": "a: Tensor, b: Tensor", "backward": True},
}
QUESTIONS = ("kind", "channels", "signature", "forward", "reference", "backward", "gradients", "dtypes",
             "out_dtype", "exact")
# Ask(question, default, help) -> the answer as typed; None when nothing is asked.
Ask = Callable[[str, Any, str], Any]


def _default_reference(answers: dict[str, Any], defaults: dict[str, Any]) -> str | None:
    kind = answers["kind"]
    if kind == "matmul":
        tensors = [p["name"] for p in parse_signature(answers["signature"])]
        return f"{tensors[0]} @ {tensors[1]}" if len(tensors) == 2 else None
    if "reference" in defaults and answers.get("forward") == defaults.get("forward") and \
            answers["signature"] == defaults["signature"]:
        return defaults["reference"]
    if kind == "elementwise" and _why_not_python(answers) is None:
        return answers["forward"]  # it reads the same in PyTorch
    return None


def _why_not_python(answers: dict[str, Any]) -> str | None:
    """Why the forward formula cannot serve as the PyTorch reference, or None if it can."""
    forward = answers.get("forward", "")
    if "?" in forward:
        return "uses C++'s ?: operator, which Python does not have (use torch.where)"
    if answers["kind"] == "pixel":
        return "is over channels, which Python does not know (index the image: img[..., 0])"
    names = {p["name"] for p in parse_signature(answers["signature"])}
    try:
        check_python_expression("forward", forward, names)
    except SpecError as error:
        reason = str(error).removeprefix(f"forward {forward!r} ")
        return f"is not a PyTorch expression too (as Python, it {reason})"
    return None


# C math functions with a torch function of the same meaning, for suggesting a reference.
_TORCH_NAMES = {**{name: name for name in """exp exp2 expm1 log log2 log10 log1p sqrt sin cos tan
    asin acos atan sinh cosh tanh asinh acosh atanh erf erfc floor ceil trunc lgamma pow atan2
    hypot fmax fmin copysign fmod abs""".split()}, "fabs": "abs"}


def _suggested_reference(answers: dict[str, Any]) -> str:
    """The forward formula in PyTorch, where a spelling change makes it one; else an example."""
    forward = answers.get("forward", "")
    suggestion = re.sub(r"(?<![\w.])([A-Za-z_]\w*)(?=\s*\()",
                        lambda m: f"torch.{_TORCH_NAMES[m[1]]}" if m[1] in _TORCH_NAMES else m[1], forward)
    suggestion = re.sub(r"(\d\.?\d*(?:[eE][+-]?\d+)?)[fF]\b", r"\1", suggestion)  # 0.5f -> 0.5
    try:
        names = {p["name"] for p in parse_signature(answers["signature"])}
        check_python_expression("reference", suggestion, names)
        return suggestion
    except SpecError:
        return "torch.where(x > 0, x, 0)" if "?" in forward else "torch.tanh(x)"


def _refuse_missing(key: str, answers: dict[str, Any], given: set[str]) -> None:
    if key == "reference":
        raise SpecError(f"--forward {answers.get('forward', '')!r} {_why_not_python(answers)}, so it "
                        "cannot serve as the tests' reference; pass --reference with the same op in "
                        f"PyTorch, e.g. --reference '{_suggested_reference(answers)}'")
    if key == "gradients":
        option = "forward" if "forward" in given else "signature"
        raise SpecError(f"--{option} {answers[option]!r} was given without --gradients, and the default "
                        "gradient is for the default formula; pass --gradients 'x: <expression using "
                        "grad>' for each tensor input, or --no-backward")
    if key == "forward":
        raise SpecError(f"--signature {answers['signature']!r} was given without --forward, and the "
                        "default formula uses x and alpha; pass --forward 'C++ expression'")
    raise SpecError(f"{key} has no answer; pass --{key.replace('_', '-')}")


# Options that mean something for some kinds only: given for another, they would be ignored.
KIND_OPTIONS = {"channels": ("pixel",), "forward": ("elementwise", "pixel"),
                "gradients": ("elementwise",)}


def _refuse_options_of_other_kinds(answers: dict[str, Any], kind: str) -> None:
    for key, kinds in KIND_OPTIONS.items():
        if key in answers and kind not in kinds:
            what = {"matmul": "matmul computes a @ b and its gradients itself",
                    "pixel": "pixel ops have no backward kernels yet",
                    "elementwise": "elementwise ops have no channels"}[kind]
            raise SpecError(f"--{key} {answers[key]!r} does not apply to --kind {kind}: {what}; "
                            f"drop --{key}")


def collect(given: dict[str, Any], ask: Ask | None = None) -> dict[str, Any]:
    """The complete, checked answers: `given`, then asked (with `ask`) or defaulted.

    The signature is returned as opgen parsed it (canonical_signature), so the template
    renders the values checked here.
    """
    for key, value in given.items():
        check_answer_text(key, value)
    answers = dict(given)

    def settle(key: str, default: Any, help_text: str = "") -> None:
        if key in answers:
            return
        if ask is not None:
            answers[key] = ask(key, default, help_text)
        elif default is not None:
            answers[key] = default
        else:
            _refuse_missing(key, answers, set(given))

    settle("kind", KINDS[0], f"what the kernel computes ({', '.join(KINDS)})")
    kind = answers["kind"]
    if kind not in KINDS:
        raise SpecError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    defaults = KIND_DEFAULTS[kind]
    _refuse_options_of_other_kinds(answers, kind)
    if kind == "pixel":
        settle("channels", defaults["channels"], "the channels of the image's last dimension")
    settle("signature", defaults["signature"], "the Python arguments, e.g. 'x: Tensor, alpha: float = 2.0'")
    params = parse_signature(answers["signature"])
    answers["signature"] = canonical_signature(params)
    if kind == "matmul":
        check_matmul_answers(answers, params)
    settle("backward", defaults["backward"], "generate backward kernels and autograd?")
    if answers["backward"]:
        # Before asking for gradients that could not be used.
        check_backward_dtypes(answers)
    names = {p["name"] for p in params}
    tensors = {p["name"] for p in params if p["type"] == "Tensor"}
    if kind != "matmul":
        # The default formula, where the signature has its names (another default value is fine).
        default_forward = defaults["forward"]
        if kind == "elementwise" and not {"x", "alpha"} <= names:
            default_forward = None
        settle("forward", default_forward, "C++ expression for one output element")
        check_answer_text("forward", answers["forward"])
        if kind == "pixel":
            check_cpp_expression("forward", answers["forward"], check_pixel_answers(answers, params))
        else:
            check_cpp_expression("forward", answers["forward"], names)
    settle("reference", _default_reference(answers, defaults), "the same op as a PyTorch expression")
    if answers["backward"] and kind != "matmul":
        # The default gradient belongs to the default formula over the default tensors.
        same_formula = answers.get("forward") == defaults.get("forward") and tensors == {"x"}
        settle("gradients", defaults.get("gradients") if same_formula else None,
               "'input: C++ expression using grad' per tensor input, ';'-separated")
    settle("dtypes", list(FLOAT_DTYPES), f"comma-separated, from {','.join(DTYPES)}")
    if isinstance(answers["dtypes"], str):
        answers["dtypes"] = parse_dtypes(answers["dtypes"])
    check_dtypes(answers["dtypes"])
    settle("out_dtype", "same", "'same' as the inputs, or a dtype")
    settle("exact", False, "must CPU and CUDA agree bit for bit?")
    validate_answers(answers)
    return {key: answers[key] for key in ("op_name", "inline", *QUESTIONS) if key in answers}
