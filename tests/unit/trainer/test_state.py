"""metrics_for_best_model: the chosen validation figures are summed, each signed so that higher is better."""
from __future__ import annotations

import math

import pytest

from textbox.trainer.state import TrainState, improves, selection_score

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


def test_train_state_round_trips_through_its_file(tmp_path):
    state = TrainState(step=7, epoch=1, batches_in_epoch=3, validations=2, validated_step=6, best_score=-1.5,
                       best_step=6, best_valid={"loss": 1.5}, stale_validations=1)
    (tmp_path / "state.json").write_text(state.to_json())
    assert TrainState.from_file(tmp_path / "state.json") == state


@pytest.mark.parametrize("score, best, expected", [
    (-2.0, None, True),  # the first finite score
    (math.nan, None, False),  # NaN never becomes the best ...
    (-1.0, None, True),  # ... so a later finite one does
    (-math.inf, None, False),
    (math.inf, -3.0, False),  # inf neither (an overflowed figure, not a good one)
    (math.nan, -3.0, False),
    (-2.0, -3.0, True),
    (-4.0, -3.0, False),
    (-4.0, math.nan, True),  # a NaN best saved by an older version is beaten by any finite score
])
def test_a_nan_or_inf_score_never_becomes_the_best(score, best, expected):
    assert improves(score, best) is expected
