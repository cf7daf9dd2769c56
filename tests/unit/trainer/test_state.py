"""TrainState round-trips through its file; a NaN/inf validation score never becomes the best."""
from __future__ import annotations

import math

import pytest

from textbox.trainer.state import TrainState, improves


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
