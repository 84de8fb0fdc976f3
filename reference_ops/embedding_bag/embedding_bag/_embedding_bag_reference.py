"""embedding_bag in PyTorch, and the inputs its tests and benchmark use. YOURS: opgen
wrote a first version once, and opgen update and copier update never change it; this is
the worked example's.

reference() is what the kernels must compute: PyTorch's own sum-mode embedding bags.
make_inputs() makes bags of 0 to 7 indices each (an empty bag sums to zero) over a table
of at least 16 rows of 64 columns, with rows named more than once across bags, so the
gradient sums several bags into one row.
"""

from __future__ import annotations

import torch
from torch import Tensor

DIM = 64


def reference(weight: Tensor, indices: Tensor, offsets: Tensor) -> Tensor:
    return torch.nn.functional.embedding_bag(indices, weight, offsets, mode="sum")


def make_inputs(size: int, dtype: torch.dtype, device) -> dict:
    """`size` bags over a table of max(size, 16) rows."""
    rows = max(size, 16)
    lengths = torch.randint(0, 8, (size,))
    offsets = torch.cumsum(lengths, 0) - lengths
    return {
        "weight": torch.randn(rows, DIM, device=device).to(dtype),
        "indices": torch.randint(0, rows, (int(lengths.sum()),), device=device),
        "offsets": offsets.to(device),
    }
