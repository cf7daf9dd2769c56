"""The exhaustive algorithm: the grid is the support of hyperopt's own sampler, visited once per point."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hyperopt.pyll import stochastic

from textbox.studies.search.algorithms import get_algorithm
from textbox.studies.search.grid import NotDiscreteError
from textbox.studies.search.optimizer import Optimizer
from textbox.studies.search.space import parse_space_text

DISCRETE = """
model_size choice ['small', 'large', 'huge']
dropout quniform (0, 0.2, 0.1)
layers randint (2, 4)
heads uniformint (1, 2)
tokenizer pchoice [(0.9, 'bpe'), (0.1, 'char')]
vocab qloguniform (0, 1.5, 2)
"""
EXPECTED_VALUES = {
    "model_size": ["small", "large", "huge"],
    "dropout": [0.0, 0.1, 0.2],
    "layers": [2, 3],
    "heads": [1, 2],
    "tokenizer": ["bpe", "char"],
    "vocab": [2.0, 4.0],  # round(exp(u) / 2) * 2 for u in (0, 1.5): exp(u) / 2 spans 0.5 .. 2.24
}


def exhaustive(text: str = DISCRETE) -> Optimizer:
    return Optimizer(parse_space_text(text, "test.space"), get_algorithm("exhaustive"), seed=7)


def point(params: dict) -> tuple:
    return tuple(round(v, 9) if isinstance(v, float) else v for _, v in sorted(params.items()))


def test_exhaustive_visits_every_grid_point_exactly_once_then_stops():
    optimizer = exhaustive()
    visited = []
    tid = 0
    while (suggestion := optimizer.ask(tid)) is not None:
        visited.append(point(suggestion.params))
        optimizer.tell(tid, score=float(tid))
        tid += 1
    expected = {point(dict(zip(EXPECTED_VALUES, combination)))
                for combination in itertools.product(*EXPECTED_VALUES.values())}
    assert optimizer.grid_size() == len(expected) == 3 * 3 * 2 * 2 * 2 * 2
    assert len(visited) == len(expected)
    assert set(visited) == expected


def test_the_grid_is_exactly_what_hyperopt_samples():
    optimizer = exhaustive()
    rng = np.random.default_rng(1)
    drawn: dict[str, set] = {label: set() for label in EXPECTED_VALUES}
    for _ in range(3000):
        for label, value in stochastic.sample(optimizer.space, rng=rng).items():
            drawn[label].add(round(value, 9) if isinstance(value, float) else value)
    assert drawn == {label: set(values) for label, values in EXPECTED_VALUES.items()}


def test_pending_and_replayed_points_are_not_suggested_again():
    first = exhaustive("a choice [1, 2, 3]\nb choice ['x', 'y']\n")
    done = [first.ask(0), first.ask(1)]
    resumed = exhaustive("a choice [1, 2, 3]\nb choice ['x', 'y']\n")
    for suggestion in done:
        resumed.replay(suggestion.tid, suggestion.raw, score=1.0)
    pending = resumed.ask(2)  # asked, never told: still taken
    rest = [resumed.ask(tid) for tid in range(3, 10)]
    remaining = [s for s in rest if s is not None]
    seen = [point(s.params) for s in [*done, pending, *remaining]]
    assert len(seen) == 6 and len(set(seen)) == 6
    assert rest[len(remaining):] == [None] * (len(rest) - len(remaining))


def test_a_continuous_parameter_has_no_grid():
    optimizer = exhaustive("learning_rate loguniform (-8, 0)\nlayers choice [1, 2]\n")
    with pytest.raises(NotDiscreteError, match="'learning_rate' uses loguniform, which has no finite grid"):
        optimizer.grid_size()


@pytest.mark.parametrize("algo", ["random", "tpe", "anneal"])
def test_suggestions_depend_on_seed_and_trial_id_only_so_a_resumed_search_asks_the_same(algo: str):
    text = "learning_rate loguniform (-8, 0)\nlayers choice [1, 2, 3]\n"

    def run(replay_first: int) -> list[dict]:
        optimizer = Optimizer(parse_space_text(text, "t"), get_algorithm(algo), seed=3)
        history = []
        for tid in range(6):
            suggestion = optimizer.ask(tid)
            history.append(suggestion.params)
            optimizer.tell(tid, score=-abs(np.log(suggestion.params["learning_rate"]) + 4))
            if tid + 1 == replay_first:  # "interrupt": rebuild from the finished trials
                fresh = Optimizer(parse_space_text(text, "t"), get_algorithm(algo), seed=3)
                for doc in optimizer.trials.trials:
                    raw = {label: values[0] for label, values in doc["misc"]["vals"].items()}
                    fresh.replay(doc["tid"], raw, -doc["result"]["loss"])
                optimizer = fresh
        return history

    assert run(replay_first=3) == run(replay_first=0)
