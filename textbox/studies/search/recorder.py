"""Records each finished trial, whichever engine ran it: trials.json (the store), trials.csv, error.txt, a log line."""
from __future__ import annotations

import logging
from typing import Mapping

from textbox.studies.search.objective import Objective
from textbox.studies.search.store import SearchStore, TrialRecord, trial_name
from textbox.studies.search.summary import write_trials_csv
from textbox.studies.common.runner import Outcome
from textbox.utils.atomic import write_text_atomic


class TrialRecorder:
    """Records each finished trial, whichever engine ran it: store, trials.csv, error.txt, log line."""

    def __init__(self, store: SearchStore, objective: Objective, max_evals: int, logger: logging.Logger):
        self.store, self.objective, self.max_evals, self.logger = store, objective, max_evals, logger

    def record(self, tid: int, params: dict[str, object], raw: dict[str, object], outcome: Outcome,
               stopped: str | None = None) -> float | None:
        """The trial's selection score (None when it failed or was ``stopped`` early, which says why), after
        recording it."""
        valid = (outcome.results or {}).get("valid", {})
        error = stopped or outcome.error or self.objective.problem(valid)
        score = None if error else self.objective.score(valid)
        run_dir = self.store.directory / trial_name(tid)
        record = TrialRecord(tid, params, raw, score, valid, round(outcome.seconds, 1), error, str(run_dir),
                             stopped=stopped is not None)
        if outcome.traceback:
            run_dir.mkdir(parents=True, exist_ok=True)
            write_text_atomic(run_dir / "error.txt", outcome.traceback)
        self.store.add(record)
        write_trials_csv(self.store.directory, self.store.records)
        best = self.store.best()
        if stopped:
            self.logger.info(f"{trial_name(tid)} ({format_params(params)}) {stopped}; "
                             f"{len(self.store.records)}/{self.max_evals}")
        elif error:
            self.logger.warning(f"{trial_name(tid)} ({format_params(params)}) failed after "
                                f"{outcome.seconds:.0f} s: {error}")
        else:
            self.logger.info(f"{trial_name(tid)} ({format_params(params)}) finished in "
                             f"{outcome.seconds:.0f} s: {self.objective.shown(valid)} ({self.objective.goal()}); "
                             f"best so far {trial_name(best.tid)} ({self.objective.shown(best.valid)}); "
                             f"{len(self.store.records)}/{self.max_evals}")
        return score


def format_params(params: Mapping[str, object]) -> str:
    return ", ".join(f"{label}={value:.4g}" if isinstance(value, float) else f"{label}={value!r}"
                     for label, value in params.items())
