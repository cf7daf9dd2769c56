"""Right padding of id rows into one tensor: collators and decoders share it."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch


def right_padded(rows: Sequence[Sequence[int] | torch.Tensor], value: int, min_width: int = 0) -> torch.Tensor:
    """``rows`` (lists or tensors of ids) right-padded with ``value`` into one long tensor [rows, longest row or
    ``min_width``], filled in place in one numpy array: a tensor per row then pad_sequence took twice as long, and
    collators and decoders run this on every batch (docs/speedups.md, "Figures behind the code's choices")."""
    width = max([min_width, *(len(row) for row in rows)])
    out = np.full((len(rows), width), value, dtype=np.int64)
    for number, row in enumerate(rows):
        out[number, :len(row)] = row
    return torch.from_numpy(out)
