"""Tokenising in several processes (textbox.data.parallel): chunks encoded by worker processes, in chunk order."""
from __future__ import annotations

import os

import pyarrow

from textbox.data.parallel import encode_in_order, resolve_processes


def pid_and_chunk(chunk: list[int]) -> pyarrow.RecordBatch:
    return pyarrow.RecordBatch.from_pydict({"pid": [os.getpid()] * len(chunk), "value": chunk})


def chunks_check() -> None:
    """Run by a fresh interpreter (a fork from the test suite's many-threaded process can deadlock)."""
    chunks = [list(range(start, start + 3)) for start in range(0, 60, 3)]
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    batches = list(encode_in_order(pid_and_chunk, chunks, 2, 60, "test"))
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"  # off in the workers only
    assert [value for batch in batches for value in batch.column("value").to_pylist()] == list(range(60))
    pids = {pid for batch in batches for pid in batch.column("pid").to_pylist()}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2, pids
    print("ok")


def test_chunks_are_encoded_by_worker_processes_and_come_back_in_order():
    from tests.helpers import fresh_python

    done = fresh_python("from tests.unit.data.test_parallel import chunks_check; chunks_check()")
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_one_process_encodes_here_and_the_environment_is_restored(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    batches = list(encode_in_order(pid_and_chunk, [[1], [2]], 1, 2, "test"))
    assert {batch.column("pid")[0].as_py() for batch in batches} == {os.getpid()}
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"


def test_none_means_the_usable_cores():
    assert resolve_processes(None) == len(os.sched_getaffinity(0))
    assert resolve_processes(3) == 3
