"""Detokenisation on a worker thread, so that turning ids into text overlaps the generation of the next batch.

Outputs arrive in batch order (length-sorted, several processes); each comes with its example's index and the
texts are put back in dataset order at the end. Writing the file is left to the caller: it needs every text in
order first, and writing a few thousand lines takes milliseconds.
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
        self._pending: list[tuple[list[int], Future[list[str]]]] = []

    def __enter__(self) -> "BackgroundDetokenizer":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._pool.shutdown(wait=True, cancel_futures=error is not None)

    def submit(self, ids: torch.Tensor, indices: torch.Tensor) -> None:
        """Queue one batch: ``ids`` [examples, length] and the dataset ``indices`` [examples] of its rows."""
        rows = ids.tolist()  # here, not in the thread: the tensor may live on a GPU
        self._pending.append((indices.tolist(), self._pool.submit(self._decode, rows)))

    def _decode(self, rows: list[list[int]]) -> list[str]:
        return [one_line(text) for text in self.tokenizer.batch_decode(rows, skip_special_tokens=True)]

    def texts(self, count: int) -> list[str]:
        """All ``count`` texts in index order. A negative index marks a filler (textbox.data.batching) and
        is dropped; an index seen twice is the same example decoded twice."""
        by_index: dict[int, str] = {}
        for indices, future in self._pending:
            by_index.update((index, text) for index, text in zip(indices, future.result()) if index >= 0)
        if sorted(by_index) != list(range(count)):
            raise RuntimeError(f"generation returned {len(by_index)} distinct example indices for {count} examples")
        return [by_index[index] for index in range(count)]
