"""What the trainer asks of a validation, and when it says what happened.

The trainer neither generates nor scores: it calls a ValidationHook (the pipeline's evaluates the model with the
Evaluator) and gets back a Validation, whose selection value picks checkpoint_best and drives early stopping."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Validation:
    """One validation as the trainer sees it: the figures it logs and records, and the value that selects the best
    checkpoint (``higher_is_better`` says which way; a NaN/inf value never becomes the best)."""

    figures: Mapping[str, float]
    selection: float
    higher_is_better: bool = True

    @property
    def score(self) -> float:
        """The selection value signed so that higher is better (what TrainState.best_score holds)."""
        return self.selection if self.higher_is_better else -self.selection


class ValidationHook:
    """Called by Trainer.fit on every process. ``validate`` is required; the two notices do nothing by default."""

    def validate(self, model: torch.nn.Module) -> Validation:
        """Evaluate ``model`` (the accelerate-prepared training model; leave its train/eval mode as found)."""
        raise NotImplementedError

    def new_best(self, validation: Validation) -> None:
        """Right after checkpoint_best was saved from this validation (e.g. to keep its generations with it)."""

    def validated(self, step: int, validation: Validation) -> None:
        """After the validation at optimiser step ``step`` is recorded and checkpoint_last saved."""
