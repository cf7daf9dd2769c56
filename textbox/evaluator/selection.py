"""Which validation figures choose the best model, and which way: one answer for the checkpoint choice (through the
pipeline's validation hook) and for the hyper-parameter search's objective."""
from __future__ import annotations

from typing import Mapping

from textbox.evaluator.metrics.registry import Options, figure_goal
from textbox.utils.labels import LOSS_FIGURES


def selection_score(figures: Mapping[str, float], names: list[str],
                    options: Options | None = None) -> float:
    """Sum of the chosen validation figures, higher is better: loss and figures whose goal is "min"
    (ter, perplexity, self_bleu) count negatively."""
    total = 0.0
    for name in (n.lower() for n in names):
        lower_is_better = name == "loss" or figure_goal(name, options or {}) == "min"
        total += -figures[name] if lower_is_better else figures[name]
    return total


def needs_generation(names: list[str]) -> bool:
    """Whether these figures (metrics_for_best_model) need generated texts, i.e. are not all loss-like."""
    return not all(name.lower() in LOSS_FIGURES for name in names)  # loss-like: no generation
