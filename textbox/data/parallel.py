"""Tokenise in several processes: contiguous chunks of examples, each encoded by a worker, joined in their order.

Why processes and not only the fast tokenizer's own threads: a batch's encoding is threaded (rayon) but what
follows it, truncation and the int lists turned into Arrow arrays, is Python, and held most of a 3M-pair run's
first tokenisation on one core (benchmarks/tokenise_speed.py measures both). Results come back in chunk order
(``imap``), so the ids are those of one process whatever the number of processes, and the cache key does not
depend on it. Workers are forked (the tokenizer is inherited, not pickled) with the tokenizer's threads off in
them: one process a core. A worker's error (a ConfigError for a length without room for text) is raised here.
"""
from __future__ import annotations

import multiprocessing
import os
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence, TypeVar

from textbox.utils.progress import bar_disabled

if TYPE_CHECKING:
    import pyarrow

Chunk = TypeVar("Chunk", bound=Sequence[object])
Encode = Callable[[Chunk], "pyarrow.RecordBatch"]

_WORKER_ENCODE: Callable[..., "pyarrow.RecordBatch"] | None = None  # set before forking, inherited by the workers


def usable_cores() -> int:
    """The cores this process may run on (its affinity, as taskset or a batch scheduler's cgroup set it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def resolve_processes(num_proc: int | None) -> int:
    """``num_proc`` (the config key), None meaning every usable core."""
    return usable_cores() if num_proc is None else num_proc


def encode_in_order(encode: Encode[Chunk], chunks: Iterable[Chunk], processes: int, total: int,
                    desc: str) -> Iterator["pyarrow.RecordBatch"]:
    """``encode(chunk)`` of every chunk, in order, on ``processes`` processes (one: in this process; the caller
    starts no more than it has chunks), with a progress bar (examples, rate and ETA) counting ``total`` examples."""
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=desc, unit=" examples", disable=bar_disabled(True)) as bar:
        for batch in _encoded(encode, chunks, processes):
            bar.update(batch.num_rows)
            yield batch


def _encoded(encode: Encode[Chunk], chunks: Iterable[Chunk], processes: int) -> Iterable["pyarrow.RecordBatch"]:
    if processes <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(encode, chunks)
        return
    global _WORKER_ENCODE
    _WORKER_ENCODE = encode
    threads = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # read by the forked workers; this process's restored below
    try:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            yield from pool.imap(_encode_in_worker, chunks)
    finally:
        _WORKER_ENCODE = None
        if threads is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = threads


def _encode_in_worker(chunk: Sequence[object]) -> "pyarrow.RecordBatch":
    assert _WORKER_ENCODE is not None, "set before the pool forks"
    return _WORKER_ENCODE(chunk)
