"""A seed study's runs are independent: the training data order of one seed is never another seed's.

accelerate's seedable sampler seeds epoch e with ``data_seed + e``; with ``data_seed = --seed`` seed 7's epoch 1 was
seed 8's epoch 0, so run_multi_seed (seeds s..s+N-1) shared data orders between its runs."""
from __future__ import annotations

import pytest

from textbox.config.launcher import agreed_launch
from textbox.pipeline.processes import build_accelerator
from textbox.trainer.loaders import train_loader
from tests.unit.trainer.tiny import trainer_config

EXAMPLES = 64


def _orders(seed: int, epochs: int, **keys) -> list[tuple[int, ...]]:
    """The example order of each epoch, as the run's training loader (shuffled batches) yields it."""
    config = trainer_config(seed=seed, train_batch_size=8, **keys)
    accelerator = build_accelerator(config, agreed_launch(config))
    loader = train_loader(config, accelerator, list(range(EXAMPLES)), lambda batch: batch, lambda _: None)
    orders = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        orders.append(tuple(index for batch in loader for index in batch))
    return orders


def test_nearby_seeds_never_share_an_epoch_order(fresh_accelerate_state):
    orders = {seed: _orders(seed, epochs=3) for seed in (7, 8, 9)}
    every = [order for seed_orders in orders.values() for order in seed_orders]
    assert all(sorted(order) == list(range(EXAMPLES)) for order in every)  # each epoch sees every example once
    assert len(set(every)) == len(every), "two (seed, epoch) pairs gave the same data order"


def test_the_same_seed_gives_the_same_orders(fresh_accelerate_state):
    assert _orders(7, epochs=2) == _orders(7, epochs=2)


@pytest.mark.parametrize("epoch", [0, 1])
def test_token_budget_batches_of_nearby_seeds_differ(fresh_accelerate_state, epoch):
    """--max_tokens draws its shuffles from (seed, epoch) itself; checked here so that both paths hold."""
    from textbox.data.batching import TokenBudgetBatchSampler
    import numpy as np

    lengths = np.array([5 + index % 7 for index in range(EXAMPLES)])
    batches = {}
    for seed, seed_epoch in ((7, epoch + 1), (8, epoch)):
        sampler = TokenBudgetBatchSampler(lengths, lengths, max_tokens=40, seed=seed)
        sampler.set_epoch(seed_epoch)
        batches[seed] = [tuple(batch) for batch in sampler]
    assert batches[7] != batches[8]
