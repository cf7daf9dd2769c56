"""Generated ids to text, and texts back in dataset order.

Outputs arrive in batch order (length-sorted, several processes); each comes with its example's index and the
texts are put back in dataset order at the end (``in_dataset_order``). With ``num_return_sequences=k`` a batch holds
k consecutive rows per example (generate's layout, best first), and every example keeps its k texts in that order.
Writing the file is left to the caller: it needs every text in order first, and writing a few thousand lines takes
milliseconds.

The transformers engine detokenises on a worker thread (``BackgroundDetokenizer``), so that turning ids into text
overlaps the generation of the next batch; the CTranslate2 engine hands a process's whole shard to its engine in
one call and detokenises the shard on the calling thread once the hypotheses are in (``detokenized``: one Rust
call, no thread hand-offs).
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def one_line(text: str) -> str:
    """Generated text may contain newlines; every output must stay one line per example."""
    return " ".join(text.split())


def detokenized(tokenizer: PreTrainedTokenizerBase, rows: list[list[int]]) -> list[str]:
    """Each row of ids as one line of text, special tokens (padding among them) left out: what
    ``tokenizer.batch_decode(rows, skip_special_tokens=True)`` returns."""
    decode_batch = _rust_decode_batch(tokenizer)
    texts = decode_batch(rows) if decode_batch is not None else tokenizer.batch_decode(rows, skip_special_tokens=True)
    return [one_line(text) for text in texts]


def _rust_decode_batch(tokenizer: PreTrainedTokenizerBase) -> Callable[[Sequence[Sequence[int]]], list[str]] | None:
    """The Rust tokenizer's own ``decode_batch``, where ``batch_decode`` would only call it row by row: a fast
    tokenizer whose class keeps transformers' batch_decode, decode and _decode, with clean_up_tokenization_spaces
    off. transformers then checks every id of every row twice in Python (to_py_obj) and calls the Rust decoder
    once per row, which cost twice the decoding itself; any other tokenizer goes through batch_decode."""
    try:
        from transformers import PreTrainedTokenizerBase
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:  # another transformers layout: batch_decode
        return None
    kind = type(tokenizer)
    if not isinstance(tokenizer, TokenizersBackend) or kind.batch_decode is not PreTrainedTokenizerBase.batch_decode \
            or kind.decode is not PreTrainedTokenizerBase.decode or kind._decode is not TokenizersBackend._decode \
            or tokenizer.clean_up_tokenization_spaces:
        return None
    backend = tokenizer.backend_tokenizer
    return lambda rows: backend.decode_batch(rows, skip_special_tokens=True)


def in_dataset_order(batches: Iterable[tuple[Sequence[int], Sequence[str]]], count: int) -> list[list[str]]:
    """For each of the ``count`` examples in index order, its k texts in generate's order, from batches of
    (dataset indices of the batch's examples, their texts: k consecutive ones per example). A negative index marks
    a filler (textbox.data.batching) and is dropped; an index seen twice is the same example decoded twice."""
    by_index: dict[int, list[str]] = {}
    for indices, texts in batches:
        per_example = _per_example(len(texts), len(indices))
        for position, index in enumerate(indices):
            if index >= 0:
                by_index[index] = list(texts[position * per_example:(position + 1) * per_example])
    if sorted(by_index) != list(range(count)):
        raise RuntimeError(f"generation returned {len(by_index)} distinct example indices for {count} examples")
    return [by_index[index] for index in range(count)]


def _per_example(rows: int, examples: int) -> int:
    if not examples or rows % examples:
        raise ValueError(f"{rows} generated rows for {examples} examples: not k rows per example")
    return rows // examples


class BackgroundDetokenizer:
    """``submit`` generated ids with their example indices; ``texts`` returns them decoded, in index order.

    One worker thread: the tokenizer is used by one thread only, and decoding (in Rust) runs while the main
    thread generates.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase):
        self.tokenizer = tokenizer
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="detokenize")
        self._pending: list[tuple[list[int], Future[list[str]]]] = []

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
        _per_example(len(rows), len(examples))
        self._pending.append((examples, self._pool.submit(detokenized, self.tokenizer, rows)))

    def sequences(self, count: int) -> list[list[str]]:
        """For each of the ``count`` examples in index order, its k texts in generate's order (see
        ``in_dataset_order``)."""
        return in_dataset_order(((indices, future.result()) for indices, future in self._pending), count)

    def texts(self, count: int) -> list[str]:
        """The first (best) text of each of the ``count`` examples, in index order."""
        return [texts[0] for texts in self.sequences(count)]
