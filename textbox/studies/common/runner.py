"""Run many pipeline runs (search trials, seed-study runs), one at a time or N at once in worker processes.

A run that raises is an outcome (its error and traceback are kept), never the end of the study; a stop
request (Ctrl-C, RunInterrupted) still stops everything, so that the study can be resumed. So does a
worker process that dies without an exception (killed for memory, a crash in native code). A worker process ends
with the process running the study (textbox.utils.orphans): a study killed with ``kill -9`` leaves no worker behind
holding memory (or a GPU's) while the study is resumed.
"""
from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from textbox.checks import load_checked_config
from textbox.config import RunInterrupted, TextBoxError
from textbox.config.launcher import worker_gpu_ids
from textbox.utils.logging import silenced_console
from textbox.utils.orphans import end_with_parent

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext
    from multiprocessing.queues import Queue

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
    overrides: dict[str, object]


def execute(overrides: dict[str, object], runner: Runner, on_validation: OnValidation | None = None) -> Outcome:
    """Build the config and run it; any failure but a stop request becomes an Outcome.

    Runs in worker processes too: the plain ``overrides`` travel there, and the config is built on arrival.
    The run writes nothing to the console (its project.log has it all): the study prints a line per run.
    ``on_validation`` (Ray Tune's per-validation report) is handed to the runner only when given.
    """

    hooks = {} if on_validation is None else {"on_validation": on_validation}
    started = time.perf_counter()
    if _worker_gpu_id is not None:  # a worker of a study with --gpu_id: its own devices, for every run it does
        overrides = {**overrides, "gpu_id": _worker_gpu_id}
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
    first = next_job()
    if first is None:
        return
    context = multiprocessing.get_context("spawn")
    devices = _device_shares(first.overrides.get("gpu_id"), workers, context)  # each worker its own GPU(s)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=_start_worker, initargs=(os.getpid(), workers, devices))
    running: dict[Future[Outcome], JobKey] = {pool.submit(execute, first.overrides, runner): first.key}
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


def _start_worker(parent_pid: int, workers: int, devices: Queue[str] | None = None) -> None:
    """A pool worker's start: it ends with the study's process (``parent_pid``), then takes its share of the
    machine (``_share_cpus``)."""
    end_with_parent(parent_pid)
    _share_cpus(workers, devices)


def _share_cpus(workers: int, devices: Queue[str] | None = None) -> None:
    """Give each worker its share of the cores (torch reads OMP_NUM_THREADS when it is first imported), and its
    own share of --gpu_id (taken from the ``devices`` queue; every run of this worker then uses it)."""
    global _worker_gpu_id
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))
    if devices is not None:
        _worker_gpu_id = devices.get(timeout=60)


_worker_gpu_id: str | None = None  # this worker process's share of --gpu_id (None: the runs keep theirs)


def _device_shares(gpu_id: object, workers: int, context: BaseContext) -> Queue[str] | None:
    """A queue holding one share of the gpu_id list per worker (None without gpu_id); a list too short to give
    every worker its own device(s) is refused before any run starts."""

    shares = worker_gpu_ids(gpu_id, workers)
    if shares is None:
        return None
    queue = context.Queue()
    for share in shares:
        queue.put(share)
    return queue
