"""What an evaluation is given (EvalSet) and what it returns (EvalReport)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textbox.data.split import Split

if TYPE_CHECKING:
    from torch.utils.data import DataLoader

    from textbox.data.examples import Examples
    from textbox.evaluator.metrics.base import Details


@dataclass
class EvalSet:
    """A tokenised evaluation split with its raw text (references are needed by the metrics). Its DataLoader is
    built once, on first use (Evaluator.loader_of), and reused by every validation."""

    data: Examples  # datasets.Dataset (or a list of dicts) with input_ids/labels
    split: Split
    loader: DataLoader | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class EvalReport:
    """One evaluation of one split: its figures (loss first, then the metrics), how each metric was computed, and
    what was generated.

    ``details`` is None when nothing was scored (loss alone); ``sequences`` is None when nothing was generated, else
    each example's num_return_sequences texts in dataset order, best first (the first is the one scored)."""

    figures: dict[str, float]
    details: dict[str, Details] | None = None
    sequences: list[list[str]] | None = None
    errors: dict[str, str] = field(default_factory=dict)  # metric -> why it failed (its figures are absent)

    @property
    def texts(self) -> list[str] | None:
        """Each example's first (scored) generation, or None when nothing was generated."""
        return None if self.sequences is None else [texts[0] for texts in self.sequences]
