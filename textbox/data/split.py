"""The raw form of a dataset split, shared by readers, tokenisation and evaluation."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Split:
    """Examples of one split, in file order. ``targets[i]`` holds one or more references of example i;
    training and the validation loss use the first one, metrics use all of them."""

    name: str
    sources: list[str]
    targets: list[list[str]]

    def __len__(self) -> int:
        return len(self.sources)
