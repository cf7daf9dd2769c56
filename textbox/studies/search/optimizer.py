"""hyperopt driven one trial at a time: ask for a point, run it anywhere, tell the loss.

fmin runs the objective itself, in its own process; asking and telling lets trials run in worker
processes and lets a resumed search replay its saved trials into a fresh ``Trials`` history.
hyperopt minimises, so the loss told is the negated selection score (higher score is better).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hyperopt import JOB_STATE_DONE, STATUS_FAIL, STATUS_OK, Domain, Trials, space_eval
from hyperopt.pyll import stochastic

from textbox.studies.search import grid
from textbox.studies.search.algorithms import Suggest
from textbox.studies.search.space import SpaceEntry


@dataclass(frozen=True)
class Suggestion:
    """A point to try: ``raw`` is hyperopt's encoding (an option index for choice), ``params`` what runs get."""

    tid: int
    raw: dict[str, object]
    params: dict[str, object]


class Optimizer:
    def __init__(self, entries: list[SpaceEntry], algorithm: Suggest, seed: int):
        self.space = {entry.label: entry.to_hyperopt() for entry in entries}
        self.domain = Domain(None, self.space)  # the objective runs outside hyperopt, so Domain needs no fn
        self.trials = Trials()
        self.algorithm = algorithm
        self.seed = seed

    def ask(self, tid: int) -> Suggestion | None:
        """The next point, or None when the algorithm has nothing left (an exhausted grid)."""
        docs = self.algorithm([tid], self.domain, self.trials, trial_seed(self.seed, tid))
        if not len(docs):
            return None
        self.trials.insert_trial_docs(docs)
        self.trials.refresh()
        raw = {label: _plain(values[0]) for label, values in docs[0]["misc"]["vals"].items() if len(values)}
        return Suggestion(tid, raw, self.params_of(raw))

    def tell(self, tid: int, score: float | None) -> None:
        """Record a finished trial: its selection score (higher is better), or None for a failure."""
        doc = next(doc for doc in self.trials.trials if doc["tid"] == tid)
        doc["state"] = JOB_STATE_DONE
        doc["result"] = _result(score)
        self.trials.refresh()

    def replay(self, tid: int, raw: dict[str, object], score: float | None) -> None:
        """Add a trial finished by an earlier, interrupted search, so the algorithm learns from it."""
        misc = {"tid": tid, "cmd": self.domain.cmd, "workdir": self.domain.workdir,
                "idxs": {label: [tid] for label in raw}, "vals": {label: [value] for label, value in raw.items()}}
        [doc] = self.trials.new_trial_docs([tid], [None], [_result(score)], [misc])
        doc["state"] = JOB_STATE_DONE
        self.trials.insert_trial_docs([doc])
        self.trials.refresh()

    def params_of(self, raw: dict[str, object]) -> dict[str, object]:
        return {label: _plain(value) for label, value in space_eval(self.space, raw).items()}

    def sample(self) -> dict[str, object]:
        """A random point, to validate the config a trial will get before the search starts."""
        return {label: _plain(value) for label, value in
                stochastic.sample(self.space, rng=np.random.default_rng(self.seed)).items()}

    def grid_size(self) -> int:
        """Points in the full grid; raises grid.NotDiscreteError when a parameter is continuous."""
        return grid.grid_size(self.domain)


def trial_seed(seed: int, tid: int) -> int:
    """The seed the algorithm gets when asked for trial ``tid``: one per trial id, so that a resumed search asks
    with the same seeds as an uninterrupted one and both engines (local, Ray) propose the same points.
    (% 2**32: SeedSequence takes non-negative entropy; --seed may be negative.)"""
    return int(np.random.SeedSequence([seed % 2**32, tid]).generate_state(1)[0])


def _result(score: float | None) -> dict[str, object]:
    return {"status": STATUS_FAIL} if score is None else {"status": STATUS_OK, "loss": -score}


def _plain(value: object) -> object:
    """numpy scalars as Python numbers (JSON, config types)."""
    return value.item() if isinstance(value, np.generic) else value
