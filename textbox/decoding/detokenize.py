"""Detokenisation on a worker thread, so that turning ids into text overlaps the generation of the next batch.

Outputs arrive in batch order (length-sorted, several processes); each comes with its example's index and the
texts are put back in dataset order at the end. With ``num_return_sequences=k`` a batch holds k consecutive rows
per example (generate's layout, best first), and every example keeps its k texts in that order. Writing the file
is left to the caller: it needs every text in order first, and writing a few thousand lines takes milliseconds.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any

import torch


def one_line(text: str) -> str:
    """Generated text may contain newlines; every output must stay one line per example."""
    return " ".join(text.split())


class BackgroundDetokenizer:
    """``submit`` generated ids with their example indices; ``texts`` returns them decoded, in index order.

    One worker thread: the tokenizer is used by one thread only, and decoding (in Rust) runs while the main
    thread generates.
    """

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="detokenize")
        self._pending: list[tuple[list[int], int, Future[list[str]]]] = []

    def __enter__(self) -> "BackgroundDetokenizer":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._pool.shutdown(wait=True, cancel_futures=error is not None)

    def submit(self, ids: torch.Tensor, indices: torch.Tensor) -> None:
        """Queue one batch: ``ids`` [examples * k, length], k consecutive rows per example, and the dataset
        ``indices`` [examples] of those examples."""
        rows = ids.tolist()  # here, not in the thread: the tensor may live on a GPU
        examples = indices.tolist()
        if not examples or len(rows) % len(examples):
            raise ValueError(f"{len(rows)} generated rows for {len(examples)} examples: not k rows per example")
        self._pending.append((examples, len(rows) // len(examples), self._pool.submit(self._decode, rows)))

    def _decode(self, rows: list[list[int]]) -> list[str]:
        return [one_line(text) for text in self.tokenizer.batch_decode(rows, skip_special_tokens=True)]

    def sequences(self, count: int) -> list[list[str]]:
        """For each of the ``count`` examples in index order, its k texts in generate's order. A negative index
        marks a filler (textbox.data.batching) and is dropped; an index seen twice is the same example decoded
        twice."""
        by_index: dict[int, list[str]] = {}
        for indices, per_example, future in self._pending:
            texts = future.result()
            for position, index in enumerate(indices):
                if index >= 0:
                    by_index[index] = texts[position * per_example:(position + 1) * per_example]
        if sorted(by_index) != list(range(count)):
            raise RuntimeError(f"generation returned {len(by_index)} distinct example indices for {count} examples")
        return [by_index[index] for index in range(count)]

    def texts(self, count: int) -> list[str]:
        """The first (best) text of each of the ``count`` examples, in index order."""
        return [texts[0] for texts in self.sequences(count)]
