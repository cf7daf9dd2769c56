"""The training DataLoader: shuffled batches of train_batch_size, or token-budget batches (max_tokens); either way
the order depends only on the seed and the epoch, so that a resumed run sees the batches an uninterrupted one would,
and every example trains once per epoch on any number of processes."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Protocol, TypeVar

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader

from textbox.config import Config
from textbox.data.examples import Collator

if TYPE_CHECKING:
    import datasets

    from textbox.data.batching import ShuffledBatchSampler, TokenBudgetBatchSampler

Batch = TypeVar("Batch")


class EpochBatches(Protocol):
    """The prepared training DataLoader (accelerate's DataLoaderShard): its batches, their number per epoch, and
    the epoch that orders them."""

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]: ...

    def __len__(self) -> int: ...

    def set_epoch(self, epoch: int) -> None: ...


def train_loader(config: Config, accelerator: Accelerator, data: datasets.Dataset, collator: Collator,
                 log: Callable[[str], None]) -> EpochBatches:
    """Batches of train_batch_size examples, or token-budget batches (max_tokens), every process getting as many
    (rounded up with fillers that train nothing: textbox.data.batching), whatever the number of examples."""
    from textbox.data.batching import TokenBudgetBatchSampler, TrainExamples

    batches = batch_sampler(config, data, accelerator.num_processes)
    if isinstance(batches, TokenBudgetBatchSampler):
        real = batches.real_batches
        log(f"max_tokens={config.max_tokens}: {real} batches per epoch of {len(data) / max(real, 1):.1f} examples "
            f"on average, {batches.padding_fraction():.1%} of their tokens padding")
    # Its own generator: creating an epoch iterator (worker seeds) must not draw from the global RNG (dropout),
    # or a resumed run would diverge from an uninterrupted one.
    generator = torch.Generator().manual_seed(config.seed)
    # Page-locked batches copy to a GPU asynchronously; on a CPU there is nothing to copy. (Asked of the
    # accelerator, not of torch.cuda at import: CUDA must not start before --gpu_id is exported.)
    pin_memory = accelerator.device.type == "cuda"
    # TrainExamples is a map-style dataset by protocol (__getitem__, __getitems__, __len__), which DataLoader takes;
    # torch's annotation asks for its Dataset class.
    loader: DataLoader[dict[str, object]] = DataLoader(
        TrainExamples(data), batch_sampler=batches, generator=generator,  # type: ignore[arg-type]
        collate_fn=collator, num_workers=config.num_workers, pin_memory=pin_memory)
    return accelerator.prepare(loader)


def batch_sampler(config: Config, data: datasets.Dataset, processes: int
                  ) -> TokenBudgetBatchSampler | ShuffledBatchSampler:
    """The training batches of every epoch: token-budget batches (max_tokens) or train_batch_size examples, their
    order depending on seed and epoch only (exact resume)."""
    from textbox.data.batching import ShuffledBatchSampler, TokenBudgetBatchSampler, column_lengths

    if config.max_tokens is not None:
        sources, targets = column_lengths(data, "input_ids"), column_lengths(data, "labels")
        return TokenBudgetBatchSampler(sources, targets, config.max_tokens, config.seed, processes)
    return ShuffledBatchSampler(len(data), config.train_batch_size, config.seed, processes)


def steps_per_epoch(config: Config, data: datasets.Dataset, processes: int) -> int:
    """Optimiser steps per epoch on ``processes`` processes, as the training loop counts them (each process gets
    an equal share of the batches, accumulation_steps of them a step)."""
    batches = len(batch_sampler(config, data, processes)) // processes
    return max(-(-batches // config.accumulation_steps), 1)


def accumulation_windows(batches: Iterable[Batch], size: int) -> Iterator[list[Batch]]:
    """Consecutive groups of ``size`` batches, one optimiser step each; an epoch's last may be shorter."""
    window: list[Batch] = []
    for batch in batches:
        window.append(batch)
        if len(window) == size:
            yield window
            window = []
    if window:
        yield window
