"""--engine=ray for the search: trials as Ray Tune trials, each one ordinary pipeline run.

Tune's HyperOptSearch runs hyperopt's own suggest function of --algo (tpe, anneal, atpe, random, and
grid.suggest for exhaustive, so the grid is the same true grid in the same order) on the space objects of
space.py. hyperopt's trial id numbers the trial's directory (trial-NNN). Tune minimises LOSS, the negated
selection score; a failed trial reports NaN and is told to hyperopt as failed. A trial reports its Outcome to
Tune, and a driver-side callback hands it to the same recorder as the local engine (trials.csv, best.json).
A worker that dies makes its trial a failed row (Tune's max_failures=0): no hang.
"""
from __future__ import annotations

import json
import math
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from ray import tune
from ray.tune.search import Searcher
from ray.tune.search.hyperopt import HyperOptSearch

from textbox.hyper.objective import Objective
from textbox.hyper.store import trial_name
from textbox.hyper.trials import trial_overrides
from textbox.study.ray_engine import tune_resources
from textbox.study.runner import Outcome, Runner, execute

LOSS = "loss"  # what Tune minimises: -selection score, NaN for a failed trial
OUTCOME = "textbox_outcome"  # the run's Outcome as JSON, read back by the driver
TUNE_DIR = "tune"  # Tune's own experiment directory inside the study directory


class _UsedUp(Exception):
    """The exhaustive grid has no point left."""


class TextBoxSearch(HyperOptSearch):
    """HyperOptSearch with hyperopt's suggest function of --algo; a config carries the hyperopt trial id and the
    raw point (hyperopt's encoding, as trials.json keeps it) beside the parameters."""

    def __init__(self, space: dict[str, Any], algorithm: Callable[..., list[dict[str, Any]]], seed: int):
        super().__init__(space=space, metric=LOSS, mode="min", n_initial_points=None,
                         random_state_seed=seed % 2**32, gamma=None)

        def suggest(new_ids: list[int], domain: Any, trials: Any, seed: int) -> list[dict[str, Any]]:
            docs = algorithm(new_ids, domain, trials, seed)
            if not len(docs):
                raise _UsedUp
            return docs

        self.algo = suggest  # hyperopt's own tpe/anneal/atpe/rand (Tune's default is tpe with its own settings)

    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:
        try:
            params = super().suggest(trial_id)
        except _UsedUp:
            return Searcher.FINISHED
        if params is None:
            return None
        tid, doc = self._live_trial_mapping[trial_id]
        raw = {label: _plain(values[0]) for label, values in doc["misc"]["vals"].items() if len(values)}
        return {"tid": int(tid), "params": {label: _plain(value) for label, value in params.items()}, "raw": raw}

    def on_trial_complete(self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False) -> None:
        failed = error or not result or not math.isfinite(result.get(LOSS, math.nan))
        super().on_trial_complete(trial_id, None if failed else result, error=failed)


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") and not isinstance(value, (list, dict, str)) else value


def _trial(config: dict[str, Any], run_keys: dict[str, Any], directory: str, objective: Objective,
           runner: Runner) -> None:
    """One Tune trial: the ordinary run of the trial's keys in directory/trial-NNN, its Outcome reported."""
    name = trial_name(config["tid"])
    run_dir = Path(directory) / name
    if run_dir.exists():  # left by an earlier attempt of this same trial (interrupted, restored by Tune)
        shutil.rmtree(run_dir)
    outcome = execute(trial_overrides(run_keys, config["params"], Path(directory), name), runner)
    valid = (outcome.results or {}).get("valid", {})
    usable = outcome.error is None and objective.problem(valid) is None
    tune.report({LOSS: -objective.score(valid) if usable else math.nan, OUTCOME: json.dumps(asdict(outcome))})


class _Recorder(tune.Callback):
    """On the driver: every finished or failed Tune trial goes to ``record(tid, params, raw, outcome)``."""

    def __init__(self, record: Callable[[int, dict[str, Any], dict[str, Any], Outcome], None]):
        self.record = record

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        config = trial.config
        self.record(config["tid"], config["params"], config["raw"], Outcome(**json.loads(trial.last_result[OUTCOME])))

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        text = Path(trial.error_file).read_text(encoding="utf-8") if trial.error_file else ""
        lines = [line for line in text.splitlines() if line.strip()]
        error = f"the Ray trial failed: {lines[-1].strip() if lines else 'no error text'}"
        config = trial.config
        self.record(config["tid"], config["params"], config["raw"], Outcome(None, error, text or None, 0.0))


def search_on_ray(space: dict[str, Any], algorithm: Callable[..., list[dict[str, Any]]], seed: int, trials: int,
                  run_keys: dict[str, Any], directory: Path, objective: Objective, resources: dict[str, float],
                  runner: Runner, record: Callable[[int, dict[str, Any], dict[str, Any], Outcome], None]) -> None:
    """Run ``trials`` Tune trials; each finished one is recorded on the driver as it ends."""
    trainable = tune.with_resources(
        tune.with_parameters(_trial, run_keys=run_keys, directory=str(directory.resolve()), objective=objective,
                             runner=runner), tune_resources(resources))
    tuner = tune.Tuner(
        trainable,
        tune_config=tune.TuneConfig(search_alg=TextBoxSearch(space, algorithm, seed), num_samples=trials,
                                    reuse_actors=True),  # a trial after the first skips the imports (~7 s)
        run_config=tune.RunConfig(name=TUNE_DIR, storage_path=str(directory.resolve()), verbose=0,
                                  callbacks=[_Recorder(record)], failure_config=tune.FailureConfig(max_failures=0)))
    tuner.fit()


