"""What the fuzzers share: the tolerance by dtype, the error measure, two layouts, and the
command line."""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable

import torch

# Relative to 1 + |value|, as error() measures.
TOLERANCE = {torch.float64: 1e-10, torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def shifted(t: torch.Tensor) -> tuple[torch.Tensor, str]:
    """t's values in a view 1-7 elements into a buffer: not 16-byte aligned."""
    shift = random.randint(1, 7)
    buffer = torch.empty(t.numel() + shift, dtype=t.dtype, device=t.device)
    view = buffer[shift:].view(t.shape)
    view.copy_(t)
    return view, f"{shift} elements in"


def transposed(t: torch.Tensor) -> tuple[torch.Tensor, str]:
    """t's values laid out transposed in its last two dimensions (not dense along rows)."""
    return t.transpose(-1, -2).contiguous().transpose(-1, -2), "transposed"


def error(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest difference of got from want, relative to 1 + |want|; inf at a NaN."""
    if got.numel() == 0:
        return 0.0
    difference = (got.detach().double() - want.detach()).abs() / (1 + want.detach().abs())
    return float(difference.nan_to_num(float("inf")).max())


def run(doc: str, trials: int, trial: Callable[[str, int], list[str]]) -> None:
    """Parse --trials, --device and --seed, run trial(device, index) that many times, print
    each finding it returns and the count."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--trials", type=int, default=trials)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    bad = 0
    for index in range(args.trials):
        for line in trial(args.device, index):
            print(line, flush=True)
            bad += 1
    print(f"{args.device}: {args.trials} trials, bad {bad}")
