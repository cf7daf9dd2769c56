"""metrics_for_best_model: the chosen validation figures are summed, each signed so that higher is better; only
loss-like figures let validation skip generation."""
from __future__ import annotations

import pytest

from textbox.evaluator.selection import needs_generation, selection_score

FIGURES = {"bleu": 30.0, "rouge-l": 40.0, "loss": 2.0, "ter": 50.0, "perplexity": 7.0}


@pytest.mark.parametrize("names, score", [
    (["bleu"], 30.0),
    (["bleu", "rouge-l"], 70.0),  # several metrics are summed
    (["loss"], -2.0),  # loss is minimised
    (["BLEU", "loss"], 28.0),
    (["bleu", "ter"], -20.0),  # ter: lower is better
    (["perplexity"], -7.0),
])
def test_selection_score_sums_figures_and_minimises_loss_like_ones(names, score):
    assert selection_score(FIGURES, names) == score


@pytest.mark.parametrize("names, generates", [(["loss"], False), (["Perplexity", "loss"], False), (["bleu"], True),
                                              (["loss", "rouge-l"], True)])
def test_only_loss_like_figures_skip_generation(names, generates):
    assert needs_generation(names) is generates
