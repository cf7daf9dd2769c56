"""Tokenising in several processes (textbox.data.parallel): chunks encoded by spawned worker processes, in chunk
order, read lazily; a worker's error raised here as itself, a killed worker one error, never a hang; workers end
when the caller stops. Spawned, not forked, so these run in the test suite's own process."""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass
from typing import Iterator

import pytest

from textbox.config.errors import ConfigError
from textbox.data.parallel import PARALLEL_MINIMUM, WorkerDied, encode_in_order, resolve_processes, usable_cores

KILL = -1  # a chunk holding it kills the worker that encodes it
FAIL = -2  # a chunk holding it raises a ConfigError


@dataclass
class Encoded:
    """What a test encoder returns: the rows a batch has (all encode_in_order reads), and where it was made. Not
    an Arrow batch, so that a spawned worker imports less (these tests start eight)."""

    values: list[int]
    pid: int
    threads: str | None  # the worker's TOKENIZERS_PARALLELISM

    @property
    def num_rows(self) -> int:
        return len(self.values)


def pid_and_chunk(chunk: list[int]) -> Encoded:
    """The chunk's values, with the worker's pid and TOKENIZERS_PARALLELISM; KILL and FAIL as above."""
    if KILL in chunk:
        os.kill(os.getpid(), signal.SIGKILL)
    if FAIL in chunk:
        raise ConfigError(["src_len=2 leaves no room for text; raise --src_len"])
    time.sleep(0.01)  # so that both workers take chunks
    return Encoded(chunk, os.getpid(), os.environ.get("TOKENIZERS_PARALLELISM"))


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail (TimeoutError in this thread) instead of hanging the suite."""
    def expire(*_: object) -> None:
        raise TimeoutError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running (a zombie, ended but not reaped, counts as ended)."""
    import psutil

    running = set()
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                running.add(pid)
    return running


def test_chunks_are_encoded_by_two_workers_read_lazily_and_come_back_in_order(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    read: list[int] = []

    def chunks() -> Iterator[list[int]]:
        for start in range(0, 60, 3):
            read.append(start)
            yield list(range(start, start + 3))

    with deadline(60):
        batches = encode_in_order(pid_and_chunk, chunks(), 2, 60, "test")
        first = next(batches)
        read_at_first = len(read)
        batches = [first, *batches]
    assert read_at_first <= 2 * 2 + 1  # two chunks a worker in flight, not the whole stream
    assert [value for batch in batches for value in batch.values] == list(range(60))
    pids = {batch.pid for batch in batches}
    assert os.getpid() not in pids and len(pids) == 2, pids
    assert {batch.threads for batch in batches} == {"false"}
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"  # off in the workers only
    assert not alive(pids)  # the pool is shut down once every chunk is back


def test_a_workers_error_is_raised_here_as_itself():
    with deadline(60), pytest.raises(ConfigError) as raised:
        list(encode_in_order(pid_and_chunk, [[1], [2], [FAIL], [4]], 2, 4, "test"))
    assert raised.value.problems == ["src_len=2 leaves no room for text; raise --src_len"]


def test_a_killed_worker_is_one_clear_error_not_a_hang():
    with deadline(60), pytest.raises(WorkerDied) as raised:
        list(encode_in_order(pid_and_chunk, [[1], [2], [KILL], [4], [5]], 2, 5, "test"))
    message = str(raised.value)
    assert "was killed by SIGKILL" in message and "--num_proc=1" in message, message


def test_workers_end_when_the_caller_is_interrupted():
    """Ctrl-C (or any exception) while the chunks are read leaves no worker behind; a consumer that stops reading
    (a ``for`` loop left by an exception: the generator closed) takes the same way out."""
    children = set(multiprocessing.active_children())

    def interrupted() -> Iterator[list[int]]:
        yield from ([value] for value in range(5))
        raise KeyboardInterrupt  # Ctrl-C, while the chunks are read

    with deadline(60), pytest.raises(KeyboardInterrupt):
        for batch in encode_in_order(pid_and_chunk, interrupted(), 2, 40, "test"):
            pids = {batch.pid}
    assert not alive(pids)
    # every worker started has ended: asked of the system (psutil), as multiprocessing's own list can lag behind it
    # when the pool's thread reaps a worker at the moment this thread asks
    assert not alive({worker.pid for worker in set(multiprocessing.active_children()) - children if worker.pid})


def test_one_process_or_one_chunk_is_encoded_here_and_the_environment_is_untouched(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    batches = list(encode_in_order(pid_and_chunk, iter([[1], [2]]), 1, 2, "test"))
    assert {batch.pid for batch in batches} == {os.getpid()}
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"
    alone = list(encode_in_order(pid_and_chunk, iter([[1, 2]]), 2, 2, "test"))  # one chunk: no worker started
    assert [(batch.values, batch.pid) for batch in alone] == [([1, 2], os.getpid())]


def test_auto_uses_every_core_from_the_minimum_on_and_one_below():
    assert resolve_processes(None, PARALLEL_MINIMUM - 1) == 1
    assert resolve_processes(None, PARALLEL_MINIMUM) == usable_cores() == len(os.sched_getaffinity(0))
    assert resolve_processes(3, 10) == 3 and resolve_processes(1, 10 * PARALLEL_MINIMUM) == 1


TERMINATED = """
import sys
from tests.unit.data.test_parallel import pid_and_chunk
from textbox.data.parallel import encode_in_order

pids = set()
for batch in encode_in_order(pid_and_chunk, ([value] for value in range(10**6)), 2, 10**6, "test"):
    pids.add(batch.pid)
    if len(pids) == 2:
        print(*pids, flush=True)
        sys.stdin.readline()  # the test's SIGTERM comes while this process waits here, the workers busy
"""


def test_the_workers_end_when_the_main_process_is_terminated():
    """SIGTERM (the default action: no exception, no finally) or SIGKILL of the main process: the kernel ends the
    workers (textbox.utils.orphans)."""
    import subprocess
    import sys

    from tests.conftest import PROJECT_ROOT
    from tests.helpers import offline_env

    main = subprocess.Popen([sys.executable, "-c", TERMINATED], cwd=PROJECT_ROOT, env=offline_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        with deadline(60):
            pids = {int(pid) for pid in main.stdout.readline().split()}
        assert len(pids) == 2 and alive(pids) == pids
        main.terminate()
        main.wait(30)
        ended = time.monotonic() + 10
        while alive(pids) and time.monotonic() < ended:
            time.sleep(0.05)
        assert not alive(pids)
    finally:
        main.kill()
        main.wait()
