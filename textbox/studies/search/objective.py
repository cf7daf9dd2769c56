"""What a search maximises: the validation figures of metrics_for_best_model, ranked exactly as the
trainer ranks checkpoints (``selection_score``: higher is better, loss and other lower-is-better
figures counted negatively). hyperopt, which minimises, is told the negated score."""
from __future__ import annotations

import math
from typing import Mapping

from textbox.config import Config
from textbox.evaluator.selection import selection_score


class Objective:
    def __init__(self, config: Config):
        self.config = config
        self.names = [name.lower() for name in config.metrics_for_best_model]

    def score(self, valid: Mapping[str, float]) -> float:
        return selection_score(valid, self.names, self.config)

    def problem(self, valid: Mapping[str, float]) -> str | None:
        """Why a finished run gives no usable score (no validation, a missing figure, NaN), or None."""
        if not valid:
            return "the run made no validation; check --valid_strategy, --valid_steps and --epochs/--max_steps"
        missing = [name for name in self.names if name not in valid]
        if missing:
            return f"the validation figures {sorted(valid)} lack {missing} (metrics_for_best_model)"
        score = self.score(valid)
        return None if math.isfinite(score) else f"validation score is {score}"

    def describe(self) -> str:
        """E.g. 'validation loss (lower is better)' or 'validation score = bleu - loss (higher is better)'."""
        signs = {name: selection_score({name: 1.0}, [name], self.config) for name in self.names}  # -1: lower wins
        if len(self.names) == 1:
            return f"validation {self.names[0]} ({'lower' if signs[self.names[0]] < 0 else 'higher'} is better)"
        terms = " ".join(f"{'-' if sign < 0 else '+'} {name}" for name, sign in signs.items()).removeprefix("+ ")
        return f"validation score = {terms} (higher is better)"

    def shown(self, valid: Mapping[str, float]) -> str:
        """A trial's figure as the user knows it: 'loss 5.607' for one figure (not the selection score -5.607, the
        loss negated), else 'score 12.3 (bleu - loss)'."""
        if len(self.names) == 1:
            return f"{self.names[0]} {valid[self.names[0]]:.4g}"
        terms = self.describe().removeprefix("validation score = ").removesuffix(" (higher is better)")
        return f"score {self.score(valid):.4g} ({terms})"

    def goal(self) -> str:
        """'lower is better' or 'higher is better': how the figure shown ranks trials."""
        return self.describe().rsplit("(", 1)[1].rstrip(")")
