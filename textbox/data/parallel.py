"""Tokenise in several processes: contiguous chunks of examples, each encoded by a worker, joined in their order.

Why processes and not only the fast tokenizer's own threads: a batch's encoding is threaded (rayon) but what
follows it, truncation and the int lists turned into Arrow arrays, is Python, and held most of a 3M-pair run's
first tokenisation on one core (benchmarks/tokenise_speed.py measures both). Results come back in chunk order, so
the ids are those of one process whatever the number of processes, and the cache key does not depend on it.

Workers are started by spawn, never forked: a fork copies the locks other threads hold, and a forked worker of a
process running many threads (the test suite's, a notebook's) once waited on one for ever. ``encode`` is pickled
once, here, and unpickled once per worker (its initializer), after the tokenizer's own threads are turned off
there: one process a core. The chunks are read lazily, at most IN_FLIGHT_PER_PROCESS per process ahead of the
one being waited for, so that a stream of chunks is never held whole. A worker's exception is raised here as
itself; a worker that dies (the kernel's out-of-memory killer, kill -9) ends the run with one WorkerDied error,
never a hang. Workers ignore Ctrl-C (it is the main process's to handle) and end with the main process: stopped
when it stops reading (an exception, Ctrl-C), killed by the kernel when it dies (textbox.utils.orphans).
"""
from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import signal
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, TypeVar

from textbox.config.errors import TextBoxError
from textbox.utils.orphans import end_with_parent
from textbox.utils.progress import bar_disabled

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    import pyarrow

Chunk = TypeVar("Chunk")
Encode = Callable[[Chunk], "pyarrow.RecordBatch"]

START_METHOD = "spawn"  # not fork (see above); forkserver: measured in docs/data.md, and why not it
IN_FLIGHT_PER_PROCESS = 2  # chunks submitted per worker: one encoding, one queued, so that none waits for work
# Examples from which num_proc=None uses every core: below, starting the workers costs more than they save
# (measured on 2 cores, with the arithmetic: docs/data.md, "Large corpora").
PARALLEL_MINIMUM = 50_000
STOP_GRACE_SECONDS = 2.0  # how long stopped workers may finish the chunk they encode before they are terminated
DEATH_REPORT_SECONDS = 10.0  # how long the report of a dead worker waits for the workers' exit codes (a loaded machine)

_WORKER_ENCODE: Callable[..., "pyarrow.RecordBatch"] | None = None  # a worker's encode, set by its initializer


class WorkerDied(TextBoxError):
    """A tokenising worker process ended without a result (killed: out of memory, kill -9)."""


def usable_cores() -> int:
    """The cores this process may run on (its affinity, as taskset or a batch scheduler's cgroup set it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def resolve_processes(num_proc: int | None, examples: int) -> int:
    """The processes that tokenise a split of ``examples``: ``num_proc`` (the config key) when set; None (auto):
    every usable core from PARALLEL_MINIMUM examples on, one below (starting workers would cost more than they
    save)."""
    if num_proc is not None:
        return num_proc
    return usable_cores() if examples >= PARALLEL_MINIMUM else 1


def encode_in_order(encode: Encode[Chunk], chunks: Iterable[Chunk], processes: int, total: int,
                    desc: str) -> Iterator["pyarrow.RecordBatch"]:
    """``encode(chunk)`` of every chunk, in order, on ``processes`` processes (one: in this process), with a
    progress bar (examples, rate and ETA) counting ``total`` examples. ``chunks`` is read as results come back."""
    from tqdm.auto import tqdm

    unread = iter(chunks)
    first = list(itertools.islice(unread, 2))  # one chunk alone is encoded here: a worker's start would cost more
    chunks = itertools.chain(first, unread)
    with tqdm(total=total, desc=desc, unit=" examples", disable=bar_disabled(True)) as bar:
        for batch in (map(encode, chunks) if processes <= 1 or len(first) < 2 else
                      _encoded(encode, chunks, processes)):
            bar.update(batch.num_rows)
            yield batch


def _encoded(encode: Encode[Chunk], chunks: Iterable[Chunk], processes: int) -> Iterator["pyarrow.RecordBatch"]:
    """The batches of worker processes, in chunk order; at most IN_FLIGHT_PER_PROCESS chunks a process read ahead.
    Workers are started as chunks are submitted, up to ``processes`` (two chunks start two)."""
    pool = ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context(START_METHOD),
                               initializer=_start_worker, initargs=(pickle.dumps(encode), os.getpid()))
    workers: dict[int, BaseProcess] = {}  # every worker started, to name the one that died and to stop them all
    pending: deque[Future[pyarrow.RecordBatch]] = deque()
    unread = iter(chunks)
    finished = False

    def submit(count: int) -> None:
        for chunk in itertools.islice(unread, count):
            pending.append(pool.submit(_encode_in_worker, chunk))
            workers.update(pool._processes)  # started by submit; the pool has no public list of them

    try:
        submit(IN_FLIGHT_PER_PROCESS * processes)
        while pending:
            batch = pending.popleft().result()
            submit(1)  # before the batch is handed on: the workers go on while the caller uses it
            yield batch
        finished = True
    except BrokenProcessPool:  # from a result or from submit, whichever first sees the worker gone
        raise WorkerDied(_death_message(workers.values())) from None
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            _stop(pool, list(workers.values()))


def _stop(pool: ProcessPoolExecutor, workers: list[BaseProcess]) -> None:
    """Cancel the chunks not started and end the workers: each may finish its chunk (a worker killed while sending a
    result could leave the pool's reader waiting for the rest) within STOP_GRACE_SECONDS, then is terminated."""
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.join(STOP_GRACE_SECONDS)
        if worker.is_alive():
            worker.terminate()
            worker.join()


def _death_message(workers: Iterable[BaseProcess]) -> str:
    """Which worker ended and how: SIGKILL is what the kernel's out-of-memory killer sends."""
    deadline = time.monotonic() + DEATH_REPORT_SECONDS
    codes = [(worker.pid, _exit_code(worker, deadline)) for worker in workers]
    deaths = [(pid, code) for pid, code in codes if code not in (0, -signal.SIGTERM, None)]
    how = ", ".join(f"pid {pid} {_exit_description(code)}" for pid, code in deaths) or "a worker ended early"
    return (f"a tokenising worker process ended without its result ({how}); if memory ran out, tokenise on fewer "
            f"processes (--num_proc=1) or free memory, then run again")


def _exit_code(worker: BaseProcess, deadline: float) -> int | None:
    """``worker``'s exit code once it has ended, by ``deadline`` (None: still running). The pool ends the others
    (SIGTERM) once it sees one gone, and its own thread may reap a worker at the same time as this one asks: the code
    then shows up a moment later, so it is polled for, not read once."""
    worker.join(max(0.0, deadline - time.monotonic()))
    while worker.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return worker.exitcode


def _exit_description(code: int | None) -> str:
    if code is not None and code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    if code == 0:  # the pool's workers return only when told to, or when their initializer failed
        return "ended before its first chunk (its start failed: the log above says why)"
    return f"exited with code {code} (its error is printed above)"


def _start_worker(payload: bytes, parent_pid: int) -> None:
    """A worker's initializer: end with the main process, leave Ctrl-C to it, one thread, then ``encode``."""
    global _WORKER_ENCODE
    end_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # before the tokenizer is unpickled: one process a core
    _WORKER_ENCODE = pickle.loads(payload)


def _encode_in_worker(chunk: object) -> "pyarrow.RecordBatch":
    assert _WORKER_ENCODE is not None, "set by _start_worker"
    return _WORKER_ENCODE(chunk)
