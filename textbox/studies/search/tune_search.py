"""--engine=ray for the search: trials as Ray Tune trials, each one ordinary pipeline run.

Tune's HyperOptSearch runs hyperopt's own suggest function of --algo (tpe, anneal, atpe, random, and
grid.suggest for exhaustive, so the grid is the same true grid in the same order) on the space objects of
space.py. hyperopt's trial id numbers the trial's directory (trial-NNN). Tune minimises LOSS, the negated
selection score; a failed trial reports NaN and is told to hyperopt as failed. A trial reports its Outcome to
Tune, and a driver-side callback hands it to the same recorder as the local engine (trials.csv, best.json).
Every validation is reported too (pipeline.run's on_validation), so --early_stop=asha can stop a trial; such a
trial is a 'stopped' row. A worker that dies makes its trial a failed row (Tune's max_failures=0): no hang.
A search interrupted on the driver (Ctrl-C) is continued by Tune's restore of its record in tune/.
"""
from __future__ import annotations

import json
import math
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ray import tune
from ray.tune.schedulers import ASHAScheduler
from ray.tune.search import Searcher
from ray.tune.search.hyperopt import HyperOptSearch

from textbox.studies.search.objective import Objective
from textbox.studies.search.optimizer import trial_seed
from textbox.studies.search.store import trial_name
from textbox.studies.search.trials import trial_overrides
from textbox.studies.common.ray_study_engine import tune_resources
from textbox.studies.common.runner import Outcome, Runner, execute
from textbox.studies.search.algorithms import Suggest

if TYPE_CHECKING:
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import ASHAScheduler

LOSS = "loss"  # what Tune minimises: -selection score, NaN for a failed trial
OUTCOME = "textbox_outcome"  # the run's Outcome as JSON, read back by the driver (its last report only)
VALIDATIONS = "validations"  # validations done: the time attribute of --early_stop=asha
STEP = "step"  # the training step of a validation report
FIGURES = "valid_figures"  # that validation's figures as JSON
TUNE_DIR = "tune"  # Tune's own experiment directory inside the study directory


class _UsedUp(Exception):
    """The exhaustive grid has no point left."""


class TextBoxSearch(HyperOptSearch):
    """HyperOptSearch with hyperopt's suggest function of --algo; a config carries the hyperopt trial id and the
    raw point (hyperopt's encoding, as trials.json keeps it) beside the parameters."""

    def __init__(self, space: dict[str, object], algorithm: Suggest, seed: int):
        super().__init__(space=space, metric=LOSS, mode="min", n_initial_points=None,
                         random_state_seed=seed % 2**32, gamma=None)

        def suggest(new_ids: list[int], domain: Any, trials: Any, _tune_seed: int) -> list[dict[str, Any]]:
            # the local engine's seed for this trial id (not Tune's running random state): the same points
            docs = algorithm(new_ids, domain, trials, trial_seed(seed, new_ids[0]))
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


def _plain(value: object) -> object:
    return value.item() if hasattr(value, "item") and not isinstance(value, (list, dict, str)) else value


def _trial(config: dict[str, Any], run_keys: dict[str, object], directory: str, objective: Objective,
           runner: Runner) -> None:
    """One Tune trial: the ordinary run of the trial's keys in directory/trial-NNN. Every validation is reported
    (the scheduler of --early_stop may stop the trial there), then the run's Outcome."""
    name = trial_name(config["tid"])
    run_dir = Path(directory) / name
    if run_dir.exists():  # left by an earlier attempt of this same trial (interrupted, restored by Tune)
        shutil.rmtree(run_dir)
    validations = 0

    def report_validation(step: int, figures: dict[str, float]) -> None:
        nonlocal validations
        validations += 1
        score = objective.score(figures) if objective.problem(figures) is None else math.nan
        tune.report({LOSS: -score, VALIDATIONS: validations, STEP: step, FIGURES: json.dumps(figures)})

    outcome = execute(trial_overrides(run_keys, config["params"], Path(directory), name), runner, report_validation)
    valid = (outcome.results or {}).get("valid", {})
    usable = outcome.error is None and objective.problem(valid) is None
    tune.report({LOSS: -objective.score(valid) if usable else math.nan, VALIDATIONS: validations,
                 OUTCOME: json.dumps(asdict(outcome))})


Record = Callable[..., "float | None"]  # TrialRecorder.record(tid, params, raw, outcome, stopped=None)
_RECORDERS: dict[str, Record] = {}  # study directory -> this driver's recorder (see _Recorder)


class _Recorder(tune.Callback):
    """On the driver: every finished, stopped or failed Tune trial goes to the study's recorder.

    Tune pickles its callbacks into its record of the experiment (tune/tuner.pkl) and a restored Tuner uses
    those copies; so this holds only the study directory and finds the current driver's recorder by it."""

    def __init__(self, directory: str):
        self.directory = directory

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: object) -> None:
        config, result = trial.config, trial.last_result
        record = _RECORDERS[self.directory]
        if OUTCOME in result:
            record(config["tid"], config["params"], config["raw"], Outcome(**json.loads(result[OUTCOME])))
            return
        # no Outcome: the scheduler stopped the trial after this validation's report
        figures = json.loads(result.get(FIGURES, "{}"))
        stopped = (f"stopped early by --early_stop=asha after validation {result.get(VALIDATIONS)} (step "
                   f"{result.get(STEP)}): its score fell behind the other trials' at that rung")
        record(config["tid"], config["params"], config["raw"],
               Outcome({"valid": figures}, None, None, float(result.get("time_total_s", 0.0))), stopped=stopped)

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: object) -> None:
        text = Path(trial.error_file).read_text(encoding="utf-8") if trial.error_file else ""
        lines = [line for line in text.splitlines() if line.strip()]
        error = f"the Ray trial failed: {lines[-1].strip() if lines else 'no error text'}"
        config = trial.config
        _RECORDERS[self.directory](config["tid"], config["params"], config["raw"],
                                   Outcome(None, error, text or None, 0.0))


def search_on_ray(space: dict[str, object], algorithm: Suggest, seed: int, trials: int,
                  run_keys: dict[str, object], directory: Path, objective: Objective, resources: dict[str, float],
                  runner: Runner, record: Record, early_stop: str) -> None:
    """Run ``trials`` Tune trials, or continue them from Tune's record in directory/tune (an interrupted search:
    finished trials are not run again, unfinished ones start afresh); each is recorded on the driver as it ends."""
    study = str(directory.resolve())
    trainable = tune.with_resources(
        tune.with_parameters(_trial, run_keys=run_keys, directory=study, objective=objective, runner=runner),
        tune_resources(resources))
    _RECORDERS[study] = record
    try:
        if tune.Tuner.can_restore(str(Path(study) / TUNE_DIR)):
            # resume_errored=False: a failed trial stays a failed row, as on the local engine
            tuner = tune.Tuner.restore(str(Path(study) / TUNE_DIR), trainable, resume_unfinished=True,
                                       resume_errored=False, restart_errored=False)
        else:
            scheduler = _scheduler(early_stop)
            tuner = tune.Tuner(
                trainable,
                tune_config=tune.TuneConfig(search_alg=TextBoxSearch(space, algorithm, seed), num_samples=trials,
                                            scheduler=scheduler, reuse_actors=True),  # later trials skip imports
                run_config=tune.RunConfig(name=TUNE_DIR, storage_path=study, verbose=0, callbacks=[_Recorder(study)],
                                          failure_config=tune.FailureConfig(max_failures=0)))
        tuner.fit()
    finally:
        del _RECORDERS[study]


def _scheduler(early_stop: str) -> ASHAScheduler | None:
    """--early_stop=asha: ASHA on the objective, one time unit per validation; Tune's default grace period (1)
    and reduction factor (4). max_t only bounds the rungs (1, 4, 16, ...): a trial still ends where its run ends."""
    if early_stop == "none":
        return None
    return ASHAScheduler(time_attr=VALIDATIONS, metric=LOSS, mode="min", max_t=4**10, grace_period=1,
                         reduction_factor=4)
