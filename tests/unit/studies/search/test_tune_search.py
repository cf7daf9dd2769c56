"""The Ray engine's searcher proposes what the local engine proposes: the same hyperopt algorithm, asked with the
same seed for each trial id (textbox.studies.search.optimizer.trial_seed), not Tune's own running random state."""
from __future__ import annotations

import pytest

from textbox.studies.search.algorithms import get_algorithm
from textbox.studies.search.optimizer import Optimizer
from textbox.studies.search.space import parse_space_text

pytest.importorskip("ray.tune", reason='--engine=ray needs pip install -e ".[ray]"')


@pytest.mark.parametrize("algo", ["random", "tpe", "anneal"])
def test_ray_and_local_propose_the_same_points_for_the_same_seed(algo: str):
    from textbox.studies.search.tune_search import TextBoxSearch

    entries = parse_space_text("learning_rate loguniform (-7, -4)\nlayers choice [1, 2, 3]\n", "test.space")
    local = Optimizer(entries, get_algorithm(algo), 2020)
    ray = TextBoxSearch(local.space, local.algorithm, 2020)
    proposed = [ray.suggest(f"trial_{tid}") for tid in range(4)]
    assert [point["tid"] for point in proposed] == [0, 1, 2, 3]
    assert [point["params"] for point in proposed] == [local.ask(tid).params for tid in range(4)]
    other = Optimizer(entries, get_algorithm(algo), 2021)
    assert [point["params"] for point in proposed] != [other.ask(tid).params for tid in range(4)]  # seed matters
