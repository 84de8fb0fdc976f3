"""pixel: y[...] = f(the channels of x[..., :]) over images whose last dimension holds channels."""

from __future__ import annotations

import re
from typing import Any

from ..cpp_expression import FLOAT
from ..naming import CPP_KEYWORDS
from ..spec import FORMULA_NAMES, SpecError, check_python_expression, cpp_formula, formula_names

NAME = "pixel"
SUMMARY = "y[...] = f(x[..., channel 0], x[..., channel 1], ...) over channel-packed images"
DEFAULTS: dict[str, Any] = {
    "channels": "r, g, b",
    "signature": "img: Tensor",
    # acc_t(...): float math for the float types, double for float64 (0.299f would round
    # the weights to float32 in a float64 op, 1e-8 off its float64 reference).
    "forward": "acc_t(0.299) * r + acc_t(0.587) * g + acc_t(0.114) * b",
    "reference": "0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]",
    "backward": False,  # pixel ops have no backward kernels yet
}
OPTIONS = frozenset({"channels", "forward"})
# Its glue has a stable-ABI version (templates/kinds/pixel/stable/): opgen new --abi stable.
STABLE_ABI = True


def parse_channels(text: str, params: list[dict[str, Any]]) -> list[str]:
    """'r, g, b' -> ['r', 'g', 'b']: the names the forward formula gives a pixel's channels."""
    channels = [c.strip() for c in text.split(",")]
    if not all(channels):
        raise SpecError(f"channels {text!r} must name each channel, comma-separated, e.g. 'r, g, b'")
    for channel in channels:
        # Channel names are only the parameters of the forward formula in the math header.
        if (not re.fullmatch(r"[a-z][a-z0-9_]*", channel) or channel in CPP_KEYWORDS
                or channel in FORMULA_NAMES):
            raise SpecError(f"channels: {channel!r} must be a lower snake-case name that is not a "
                            "C++ keyword, math function, acc_t, grad or torch, e.g. r")
    if len(set(channels)) != len(channels) or set(channels) & {p["name"] for p in params}:
        raise SpecError(f"channels {text!r}: the channel names must differ from each other and from "
                        "the arguments")
    return channels


def settle(answers: dict[str, Any], settle, params: list[dict[str, Any]],
           given: set[str]) -> dict[str, Any]:
    images = [p["name"] for p in params if p["type"] == "Tensor"]
    if len(images) != 1:
        raise SpecError(f"--signature {answers['signature']!r}: a pixel op takes one image tensor, "
                        f"not {len(images)} ({', '.join(images)})")
    if answers["backward"]:
        raise SpecError("pixel ops have no backward kernels yet; pass --no-backward")
    settle("channels", DEFAULTS["channels"], "the channels of the image's last dimension")
    channels = parse_channels(answers["channels"], params)
    scalars = {name: kind for name, kind in formula_names(params).items() if name not in images}
    settle("forward", DEFAULTS["forward"], "C++ expression for one output value, over the channels")
    forward = cpp_formula("forward", answers["forward"], {**dict.fromkeys(channels, FLOAT),
                                                          **scalars})
    default_reference = (DEFAULTS["reference"] if answers["forward"] == DEFAULTS["forward"]
                         and answers["signature"] == DEFAULTS["signature"] else None)
    settle("reference", default_reference, "the same op as a PyTorch expression over the image")
    if "reference" not in answers:
        # The formula is over channels, which Python does not know.
        image = images[0]
        example = " + ".join(f"{image}[..., {i}]" for i in range(len(channels)))
        raise SpecError(f"--forward {answers['forward']!r} is over channels, which the PyTorch reference "
                        f"cannot name; pass --reference indexing the image, e.g. --reference '{example}'")
    reference = check_python_expression("reference", answers["reference"], {p["name"] for p in params})
    answers["reference"] = reference
    return {"channels": channels, "forward": answers["forward"], "forward_cpp": forward.cpp,
            "forward_body": forward.body}


def options(record: dict[str, Any]) -> dict[str, Any]:
    """The command-line answers of the fields settle() records."""
    return {"channels": ", ".join(record["channels"]), "forward": record["forward"]}
