"""Run many pipeline runs (search trials, seed-study runs), one at a time or N at once in worker processes.

A run that raises is an outcome (its error and traceback are kept), never the end of the study; a stop
request (Ctrl-C, RunInterrupted) still stops everything, so that the study can be resumed. So does a
worker process that dies without an exception (killed for memory, a crash in native code).
"""
from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from textbox.checks import load_checked_config
from textbox.config import Config, RunInterrupted, TextBoxError

JobKey = TypeVar("JobKey")
Runner = Callable[..., dict[str, Any]]  # pipeline.run: (config, *, on_validation=None) -> results
OnValidation = Callable[[int, dict[str, float]], None]  # (step, validation figures), after each validation


@dataclass(frozen=True)
class Outcome:
    """What one run gave: its results.json content, or the error that stopped it."""

    results: dict[str, Any] | None
    error: str | None
    traceback: str | None
    seconds: float


@dataclass(frozen=True)
class Job(Generic[JobKey]):
    """One run to do: ``overrides`` are command-line-level keys (the study's keys plus this run's own)."""

    key: JobKey
    overrides: dict[str, Any]


def execute(overrides: dict[str, Any], runner: Runner, on_validation: OnValidation | None = None) -> Outcome:
    """Build the config and run it; any failure but a stop request becomes an Outcome.

    Runs in worker processes too: the plain ``overrides`` travel there, and the config is built on arrival.
    The run writes nothing to the console (its project.log has it all): the study prints a line per run.
    ``on_validation`` (Ray Tune's per-validation report) is handed to the runner only when given.
    """
    from textbox.utils.logging import silenced_console

    hooks = {} if on_validation is None else {"on_validation": on_validation}
    started = time.perf_counter()
    try:
        with silenced_console():
            results = runner(load_checked_config((), overrides), **hooks)
    except (RunInterrupted, KeyboardInterrupt):
        raise
    except Exception as error:  # a failed run is data for the study, recorded with its traceback
        return Outcome(None, f"{type(error).__name__}: {error}", traceback.format_exc(),
                       time.perf_counter() - started)
    return Outcome(results, None, None, time.perf_counter() - started)


def run_jobs(next_job: Callable[[], Job[JobKey] | None], on_outcome: Callable[[JobKey, Outcome], None],
             workers: int, runner: Runner) -> None:
    """Keep up to ``workers`` runs going; ask for the next job only when a slot frees, so that adaptive
    algorithms (tpe, anneal) have seen every finished result before they suggest again."""
    if workers == 1:
        while (job := next_job()) is not None:
            on_outcome(job.key, execute(job.overrides, runner))
        return
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_share_cpus, initargs=(workers,))
    running: dict[Future[Outcome], JobKey] = {}
    try:
        while True:
            while len(running) < workers and (job := next_job()) is not None:
                running[pool.submit(execute, job.overrides, runner)] = job.key
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                on_outcome(running.pop(future), future.result())
    except BrokenProcessPool:
        raise TextBoxError(f"a worker process died while running {', '.join(map(str, running.values()))} "
                           f"(killed, e.g. for memory, or crashed); finished runs are saved") from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _share_cpus(workers: int) -> None:
    """Give each worker its share of the cores (torch reads OMP_NUM_THREADS when it is first imported)."""
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))
