"""run_hyper.py: search a space file with a hyperopt algorithm, one pipeline run per trial.

The search directory (saved_dir/hyper-<timestamp>, or saved_dir/filename):
  settings.json, trials.json   what is searched; every finished trial (--resume=True reads both)
  trial-000/, trial-001/ ...   one run directory per trial, trained without touching the test split
  test-trial-NNN/              the best trial's checkpoint_best scored on the test split (the only test run)
  trials.csv, best.json, search.png, summary.md, study.log

Trials are ranked on the validation figures of metrics_for_best_model (see objective.py).
"""
from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textbox.checks import load_checked_config
from textbox.config import Config, ConfigError, RunInterrupted, TextBoxError, TextBoxUserError
from textbox.config.run_config import BEST_CHECKPOINT, MODEL_BUILDING
from textbox.studies.search.algorithms import get_algorithm
from textbox.studies.search.objective import Objective
from textbox.studies.search.options import SEARCH_OPTIONS
from textbox.studies.search.recorder import TrialRecorder, format_params
from textbox.studies.search.space import parse_space_file
from textbox.studies.search.store import SearchStore, TrialRecord, check_engine_record, trial_name
from textbox.studies.search.summary import write_search_report
from textbox.studies.search.trials import fit_key_types, trial_overrides
from textbox.studies.common.directory import study_directory, study_logger
from textbox.studies.common.study_engine import StudyEngine, check_study_engine
from textbox.studies.common.tool_options import split_options
from textbox.studies.common.runner import Job, Outcome, Runner, execute, run_jobs
from textbox.utils.atomic import write_text_atomic
from textbox.utils.logging import FILE_ONLY

if TYPE_CHECKING:
    from textbox.studies.search.optimizer import Optimizer, Suggestion


@dataclass(frozen=True)
class SearchResult:
    directory: Path
    best: TrialRecord | None
    test: dict[str, float] | None
    report: str  # the markdown summary, also printed and saved as summary.md


def run_search(argv: list[str], runner: Runner | None = None) -> SearchResult:
    """Check everything, run the trials (resuming when asked), test the best trial, write the report."""
    if runner is None:  # imported here: the pipeline imports torch, which a bad option or --help never needs
        from textbox.pipeline import run as runner
    plan = _plan(argv)
    _log_start(plan)
    _run_trials(plan, TrialRecorder(plan.store, plan.objective, plan.max_evals, plan.logger), runner)
    return _test_and_report(plan, runner)


@dataclass(frozen=True)
class _SearchPlan:
    """Everything checked before the first trial: options, the run keys every trial gets, the space's optimiser,
    the objective, the search directory with its store and log."""

    options: dict[str, Any]
    run_keys: dict[str, object]
    engine: StudyEngine
    base: Config
    optimizer: Optimizer
    objective: Objective
    max_evals: int
    directory: Path
    store: SearchStore
    logger: logging.Logger
    entries: int  # parameters searched

    @property
    def resume_hint(self) -> str:
        return f"continue it with the same arguments plus --filename={self.directory.name} --resume=True"


def _plan(argv: list[str]) -> _SearchPlan:
    from textbox.studies.search.optimizer import Optimizer  # hyperopt loads only when a search really starts

    options, run_keys = split_options(argv, SEARCH_OPTIONS)
    engine = check_study_engine(options, run_keys)
    if options["early_stop"] != "none" and engine.name != "ray":
        raise TextBoxUserError(f"--early_stop={options['early_stop']} needs --engine=ray (Tune's scheduler stops "
                               f"trials at their validations); the local engine runs every trial to its end: add "
                               f"--engine=ray or leave --early_stop out")
    entries = parse_space_file(options["space"])
    base = load_checked_config((), run_keys)
    if not (base.do_train and base.do_valid):
        raise TextBoxUserError("run_hyper chooses trials on validation figures: it needs --do_train=True and "
                               "--do_valid=True")
    if base.max_save == 0:
        raise TextBoxUserError("run_hyper tests the best trial's checkpoint_best, which --max_save=0 removes when the "
                               "trial ends: use --max_save=1 (checkpoint_best alone, the least a search can keep)")
    optimizer = Optimizer(entries, get_algorithm(options["algo"]), base.seed)
    max_evals = _max_evals(options, optimizer)
    directory = study_directory(base, "hyper")
    _check_sample_point(options["space"], run_keys, optimizer.sample(), directory)
    settings = {"space": [[e.label, e.algorithm, list(e.arguments)] for e in entries], "algo": options["algo"],
                "run_keys": run_keys}
    store = SearchStore.open(directory, settings, options["resume"])
    check_engine_record(directory, {"engine": engine.name, "max_evals": max_evals,
                                    "early_stop": options["early_stop"]}, options["resume"])
    logger = study_logger(directory, "hyper")
    for record in store.records:
        optimizer.replay(record.tid, record.raw, record.score)
    return _SearchPlan(options, run_keys, engine, base, optimizer, Objective(base), max_evals, directory, store,
                       logger, len(entries))


def _log_start(plan: _SearchPlan) -> None:
    options, engine, store, logger = plan.options, plan.engine, plan.store, plan.logger
    logger.info(f"search directory {plan.directory}; {options['algo']} over {plan.entries} parameter(s), "
                f"max_evals={plan.max_evals}, {_engine_text(engine, options['workers'])}; objective: "
                f"{plan.objective.describe()}")
    if options["resume"] and engine.name == "ray":
        logger.info(f"resuming: {len(store.records)} finished trial(s) kept; Ray Tune restores its record "
                    f"({plan.directory / 'tune'}) and starts the unfinished trials afresh under their own trial ids")
    elif options["resume"]:
        logger.info(f"resuming: {len(store.records)} finished trial(s) kept; interrupted ones (directories left as "
                    f"they are, points suggested anew): {', '.join(store.interrupted_trials()) or 'none'}")
    logger.info(f"if the search is interrupted, {plan.resume_hint}")


def _run_trials(plan: _SearchPlan, recorder: TrialRecorder, runner: Runner) -> None:
    """Every trial, on Ray Tune or on the local engine; a stop (Ctrl-C) says how to continue."""
    try:
        if plan.engine.name == "ray":
            from textbox.studies.common.ray_study_engine import ray_session  # imports ray
            from textbox.studies.search.tune_search import search_on_ray

            with ray_session(plan.engine):
                search_on_ray(plan.optimizer.space, plan.optimizer.algorithm, plan.base.seed, plan.max_evals,
                              plan.run_keys, plan.directory, plan.objective, plan.engine.resources, runner,
                              recorder.record, plan.options["early_stop"])
            if len(plan.store.records) < plan.max_evals:  # Tune returns from a Ctrl-C after saving its state
                raise RunInterrupted("the Ray Tune run was stopped", 130)
        else:
            trials = _TrialLoop(plan.optimizer, recorder, plan.run_keys, plan.max_evals, plan.logger)
            run_jobs(trials.next_job, trials.finish, plan.options["workers"], runner)
    except (RunInterrupted, KeyboardInterrupt) as stop:
        raise RunInterrupted(f"search stopped after {len(plan.store.records)} finished trial(s); {plan.resume_hint}",
                             getattr(stop, "exit_code", 130)) from None


def _test_and_report(plan: _SearchPlan, runner: Runner) -> SearchResult:
    """Test the best trial (when the runs test), write the report; no trial finished, or a failed test, is an
    error after the report is written."""
    store, directory = plan.store, plan.directory
    best = store.best()
    test, test_error = (None, None)
    if best is not None and plan.base.do_test:
        test, test_error = _test_best(best, plan.run_keys, directory, runner, plan.logger)
    report = write_search_report(directory, store.records, best, test, plan.options["space"], plan.options["algo"],
                                 plan.max_evals, plan.objective)
    if best is None:
        raise TextBoxError(f"all {len(store.records)} trial(s) failed; their errors are in {directory}/trials.csv "
                           f"and each trial's error.txt")
    if test_error:
        raise TextBoxError(f"testing the best trial {trial_name(best.tid)} failed: {test_error}")
    return SearchResult(directory, best, test, report)


def _max_evals(options: dict[str, Any], optimizer: Optimizer) -> int:
    """Exhaustive: the grid size unless told otherwise (a continuous parameter is an error); others: required."""
    if options["algo"] == "exhaustive":
        from textbox.studies.search.grid import NotDiscreteError

        try:
            size = optimizer.grid_size()
        except NotDiscreteError as error:
            raise TextBoxUserError(f"--algo=exhaustive, --space={options['space']}: {error}") from None
        return min(size, options["max_evals"] or size)
    if options["max_evals"] is None:
        raise TextBoxUserError(f"--algo={options['algo']} samples without end: give --max_evals=N")
    return options["max_evals"]


def _check_sample_point(space: str, run_keys: dict[str, object], point: dict[str, object], directory: Path) -> None:
    """Before any trial: a space label that is no config key (or a value of the wrong type) fails here,
    with the message the command line would give."""
    try:
        load_checked_config((), trial_overrides(run_keys, point, directory, trial_name(0)))
    except ConfigError as error:
        raise ConfigError([f"{problem} [search space {space}, sample point {point}]"
                           for problem in error.problems]) from None


def _engine_text(engine: StudyEngine, workers: int) -> str:
    if engine.name == "local":
        return f"workers={workers}"
    return f"engine=ray ({engine.address or 'local instance'}), {engine.resources} per trial"


class _TrialLoop:
    """Hands trials to ``run_jobs`` (local engine) and records each finished one (optimizer, recorder)."""

    def __init__(self, optimizer: Optimizer, recorder: TrialRecorder, run_keys: dict[str, object], max_evals: int,
                 logger: logging.Logger):
        self.optimizer, self.recorder, self.store, self.run_keys = optimizer, recorder, recorder.store, run_keys
        self.max_evals, self.logger = max_evals, logger
        self.running: dict[int, Suggestion] = {}
        self.tid = self.store.next_tid()

    def next_job(self) -> Job[int] | None:
        if len(self.store.records) + len(self.running) >= self.max_evals:
            return None
        suggestion = self.optimizer.ask(self.tid)
        if suggestion is None:
            self.logger.info("the grid is used up: every point has been tried")
            return None
        self.running[self.tid] = suggestion
        self.tid += 1
        name = trial_name(suggestion.tid)
        self.logger.info(f"{name} starts: {format_params(suggestion.params)}", extra=FILE_ONLY)  # study.log only
        return Job(suggestion.tid, trial_overrides(self.run_keys, suggestion.params, self.store.directory, name))

    def finish(self, tid: int, outcome: Outcome) -> None:
        suggestion = self.running.pop(tid)
        self.optimizer.tell(tid, self.recorder.record(tid, suggestion.params, suggestion.raw, outcome))


def _test_best(best: TrialRecord, run_keys: dict[str, object], directory: Path, runner: Runner,
               logger: logging.Logger) -> tuple[dict[str, float] | None, str | None]:
    """Score the best trial's checkpoint_best on the test split (reused when a resumed search already did)."""
    test_dir = directory / f"test-{trial_name(best.tid)}"
    if (test_dir / "results.json").is_file():
        logger.info(f"test of {trial_name(best.tid)} already done in {test_dir}")
        return json.loads((test_dir / "results.json").read_text(encoding="utf-8")).get("test"), None
    if test_dir.exists():
        logger.info(f"removing the unfinished test run {test_dir}")
        shutil.rmtree(test_dir)
    logger.info(f"testing the best trial {trial_name(best.tid)} ({format_params(best.params)})")
    keys = {key: value for key, value in {**run_keys, **fit_key_types(best.params)}.items()
            if key not in MODEL_BUILDING}  # the trial's checkpoint_best already holds the model they built
    overrides = {**keys, "model_path": str(Path(best.run_dir) / BEST_CHECKPOINT), "do_train": False,
                 "do_test": True, "saved_dir": str(directory), "filename": test_dir.name}
    outcome = execute(overrides, runner)
    if outcome.traceback:
        test_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(test_dir / "error.txt", outcome.traceback)
    return (outcome.results or {}).get("test"), outcome.error
