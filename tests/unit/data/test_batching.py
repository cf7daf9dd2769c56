"""Token-budget and length-sorted batches: coverage, budgets, padding, reproducibility, several processes, resume."""
from __future__ import annotations

import numpy as np
import pytest
from accelerate.data_loader import BatchSamplerShard

from textbox.config.errors import ConfigError
from textbox.data.batching import (FILLER_INDEX, EvalExamples, LengthSortedBatchSampler, TokenBudgetBatchSampler,
                                   column_lengths, padded_cost, padding_fraction)


def _lengths(count: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Correlated source/target lengths spread like a translation corpus's."""
    rng = np.random.default_rng(seed)
    sources = rng.integers(4, 48, size=count)
    targets = np.clip(sources + rng.integers(-5, 6, size=count), 3, None)
    return sources, targets


def _flat(batches: list[list[int]]) -> list[int]:
    return [index for batch in batches for index in batch]


def test_every_example_once_per_epoch_within_the_budget_with_little_padding():
    sources, targets = _lengths()
    sampler = TokenBudgetBatchSampler(sources, targets, max_tokens=1024, seed=3)
    batches = list(sampler)
    assert sorted(_flat(batches)) == list(range(len(sources)))
    assert all(padded_cost(sources[b], targets[b]) <= 1024 for b in batches)
    assert len(batches) == len(sampler)
    assert padding_fraction(batches, sources, targets) < 0.05


def test_sparse_lengths_get_wider_buckets_and_less_padding():
    """Few examples per (source, target) length, as in pydoc: blocks of lengths pad less than runs."""
    from textbox.data.batching import _cut_by_budget, _sort_keys

    rng = np.random.default_rng(0)
    sources, targets = rng.integers(10, 97, 3000), rng.integers(1, 25, 3000)
    sampler = TokenBudgetBatchSampler(sources, targets, 2048, seed=0)
    one_source_length_at_a_time = np.lexsort(_sort_keys(sources, targets, 1))
    runs = [one_source_length_at_a_time[start:end] for start, end in
            _cut_by_budget(sources[one_source_length_at_a_time], targets[one_source_length_at_a_time], 2048, "x")]
    assert sampler.sampler.width > 1
    assert padding_fraction(sampler.batches(), sources, targets) < 0.7 * padding_fraction(runs, sources, targets)


def test_same_seed_and_epoch_same_batches_other_epoch_other_order_same_count():
    sources, targets = _lengths()
    first, again = (TokenBudgetBatchSampler(sources, targets, 1024, seed=3) for _ in range(2))
    first.set_epoch(2)
    again.set_epoch(2)
    assert first.batches() == again.batches()
    again.set_epoch(3)
    assert again.batches() != first.batches() and len(again.batches()) == len(first.batches())
    assert TokenBudgetBatchSampler(sources, targets, 1024, seed=4).batches() != \
        TokenBudgetBatchSampler(sources, targets, 1024, seed=3).batches()


def test_batch_order_is_random_across_lengths():
    sources, targets = _lengths()
    longest_source = [int(sources[b].max()) for b in TokenBudgetBatchSampler(sources, targets, 1024, seed=1)]
    assert longest_source != sorted(longest_source) and longest_source != sorted(longest_source, reverse=True)


def test_padding_fraction_counts_source_and_target_padding():
    sources, targets = np.array([2, 4]), np.array([3, 1])
    # padded: 2 x (4 + 3) = 14 tokens; real: 2 + 4 + 3 + 1 = 10
    assert padding_fraction([[0, 1]], sources, targets) == pytest.approx(4 / 14)
    assert padding_fraction([[0], [1]], sources, targets) == 0.0


def test_an_example_longer_than_the_budget_names_the_key():
    with pytest.raises(ConfigError, match=r"--max_tokens=10 is smaller than one example of 8 source \+ 4 target"):
        TokenBudgetBatchSampler(np.array([3, 8]), np.array([2, 4]), max_tokens=10, seed=0)


@pytest.mark.parametrize("count", [2000, 7])
def test_two_processes_get_whole_batches_and_equal_numbers(count: int):
    sources, targets = _lengths(count)
    sampler = TokenBudgetBatchSampler(sources, targets, 256, seed=0)
    shards = [BatchSamplerShard(sampler, num_processes=2, process_index=rank) for rank in range(2)]
    per_process = [list(shard) for shard in shards]
    assert len(per_process[0]) == len(per_process[1]) == len(shards[0]) == len(shards[1])
    whole = [tuple(batch) for batch in sampler.batches()]
    assert all(tuple(batch) in whole for batch in per_process[0] + per_process[1])
    assert set(_flat(per_process[0] + per_process[1])) == set(range(count))


def test_resume_skips_exactly_the_batches_already_trained():
    """Through accelerate, as the trainer does: set_epoch, then skip_first_batches on a fresh loader."""
    from accelerate import Accelerator
    from torch.utils.data import DataLoader

    sources, targets = _lengths(300)
    accelerator = Accelerator(cpu=True)

    def loader() -> DataLoader:
        batches = TokenBudgetBatchSampler(sources, targets, 256, seed=5)
        return accelerator.prepare(DataLoader(list(range(300)), batch_sampler=batches, collate_fn=list))

    whole = loader()
    whole.set_epoch(1)
    epoch_one = list(whole)
    resumed = loader()
    resumed.set_epoch(1)
    assert list(accelerator.skip_first_batches(resumed, 4)) == epoch_one[4:]
    whole.set_epoch(0)
    assert list(whole) != epoch_one


def test_eval_batches_longest_first_by_count_or_budget():
    sources, targets = _lengths(103)
    by_count = list(LengthSortedBatchSampler(sources, targets, batch_size=10))
    assert [len(b) for b in by_count] == [10] * 10 + [3]
    assert sorted(_flat(by_count)) == list(range(103))
    longest = [int(sources[b].max()) for b in by_count]
    assert longest == sorted(longest, reverse=True)
    by_budget = list(LengthSortedBatchSampler(sources, targets, batch_size=10, max_tokens=300))
    assert all(padded_cost(sources[b], targets[b]) <= 300 for b in by_budget)
    assert sorted(_flat(by_budget)) == list(range(103))


@pytest.mark.parametrize(("count", "num_processes", "max_tokens"), [(13, 2, None), (13, 3, None), (40, 2, 150),
                                                                 (1, 2, None)])
def test_eval_rounds_have_equal_batches_and_every_example_once(count, num_processes, max_tokens):
    """accelerate gathers one batch per process at a time: equal sizes, topped up by fillers, never repeats."""
    sources, targets = _lengths(count)
    sampler = LengthSortedBatchSampler(sources, targets, batch_size=4, max_tokens=max_tokens,
                                       num_processes=num_processes)
    shards = [list(BatchSamplerShard(sampler, num_processes=num_processes, process_index=rank))
              for rank in range(num_processes)]
    assert len({len(shard) for shard in shards}) == 1
    for batches_of_a_round in zip(*shards):
        assert len({len(batch) for batch in batches_of_a_round}) == 1
    dealt = _flat([batch for shard in shards for batch in shard])
    assert sorted(i for i in dealt if i < count) == list(range(count))
    assert all(i - count in range(count) for i in dealt if i >= count)


def test_one_process_needs_no_fillers():
    sources, targets = _lengths(13)
    assert sorted(_flat(list(LengthSortedBatchSampler(sources, targets, batch_size=4)))) == list(range(13))


def test_lengths_from_a_dataset_and_from_dicts_agree():
    import datasets

    rows = [{"input_ids": [1] * n, "labels": [2] * (n + 1)} for n in (3, 1, 4)]
    table = datasets.Dataset.from_list(rows)
    assert column_lengths(table, "input_ids").tolist() == column_lengths(rows, "input_ids").tolist() == [3, 1, 4]
    assert column_lengths(table.select([2, 0]), "labels").tolist() == [5, 4]


def test_eval_examples_carry_their_index_and_fillers_add_nothing():
    import datasets

    table = datasets.Dataset.from_list([{"input_ids": [1] * n, "labels": [2] * (n + 1)} for n in (3, 1, 4)])
    examples = EvalExamples(table)
    assert len(examples) == 3
    assert examples[2] == {"input_ids": [1, 1, 1, 1], "labels": [2] * 5, "index": 2}
    assert examples[3 + 1] == {"input_ids": [1], "labels": [-100, -100], "index": FILLER_INDEX}


def test_the_eval_loader_reads_each_batch_of_a_dataset_at_once():
    """Evaluation batches are read in one table slice each, not one read per example (what made the loader the
    largest cost the framework added around CTranslate2), with the same examples, indices and fillers."""
    import datasets
    from torch.utils.data import DataLoader

    class CountedReads(datasets.Dataset):
        reads: list[str] = []

        def __getitem__(self, key):  # noqa: ANN001, ANN204
            if isinstance(key, int):  # datasets' own __getitems__ reads its list of keys through here
                self.reads.append("one")
            return super().__getitem__(key)

        def __getitems__(self, keys):  # noqa: ANN001, ANN204
            self.reads.append("batch")
            return super().__getitems__(keys)

    rows = [{"input_ids": [1] * n, "labels": [2] * (n + 1)} for n in (3, 1, 4, 2)]
    table = datasets.Dataset.from_list(rows)
    counted = CountedReads(table.data, table.info, table.split)
    batches = [[2, 0, 1], [3, 4 + 1]]  # position 5: example 1 as a filler
    loader = DataLoader(EvalExamples(counted), batch_sampler=batches, collate_fn=list)
    read = list(loader)
    assert counted.reads == ["batch", "batch"]
    assert read == [[{**rows[2], "index": 2}, {**rows[0], "index": 0}, {**rows[1], "index": 1}],
                    [{**rows[3], "index": 3}, {"input_ids": [1], "labels": [-100, -100], "index": FILLER_INDEX}]]


def test_the_trainer_loader_leaves_the_global_rng_to_dropout(tmp_path):
    """A resumed run re-creates the epoch iterator: drawing from the global RNG there would change dropout."""
    import logging

    import datasets
    import torch
    from accelerate import Accelerator

    from textbox.config.loader import Config
    from textbox.config.schema import DEFAULTS
    from textbox.data.collate import Seq2SeqCollator
    from textbox.trainer.loaders import train_loader

    sources, targets = _lengths(200)
    data = datasets.Dataset.from_dict({"input_ids": [[5] * n for n in sources], "labels": [[6] * n for n in targets]})
    config = Config({**DEFAULTS, "max_tokens": 300})
    loader = train_loader(config, Accelerator(cpu=True), data, Seq2SeqCollator(1), logging.getLogger().info)
    loader.set_epoch(1)
    state = torch.random.get_rng_state()
    batches = list(loader)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert len(batches) == len(loader)
    assert all(batch["input_ids"].numel() + batch["labels"].numel() <= 300 for batch in batches)


@pytest.mark.parametrize("count, size, processes", [(20, 3, 2), (21, 3, 2), (7, 1, 4), (5, 8, 3)])
def test_shuffled_batches_cover_every_example_once_in_equal_shares(count, size, processes):
    from textbox.data.batching import ShuffledBatchSampler

    sampler = ShuffledBatchSampler(count, size, seed=1, num_processes=processes)
    batches = sampler.batches()
    assert len(batches) == len(sampler) and len(batches) % processes == 0
    real = [index for batch in batches for index in batch if index < count]
    assert sorted(real) == list(range(count))  # each example once; the rest are fillers (positions >= count)
    assert all(len(batch) <= size for batch in batches)


def test_token_budget_batches_are_rounded_up_with_fillers():
    sources, targets = np.array([5, 9, 7, 6, 8]), np.array([3, 4, 2, 5, 3])
    one = TokenBudgetBatchSampler(sources, targets, max_tokens=13, seed=0)  # one example per batch
    two = TokenBudgetBatchSampler(sources, targets, max_tokens=13, seed=0, num_processes=2)
    assert len(one) == 5 and len(two) == 6
    assert two.batches()[:5] == one.batches() and two.batches()[5] == [5 + i for i in one.batches()[0]]


def test_a_training_filler_is_its_example_with_every_target_token_ignored():
    import datasets

    from textbox.data.batching import TrainExamples

    table = datasets.Dataset.from_dict({"input_ids": [[1, 2], [3]], "labels": [[4, 5], [6]]})
    examples = TrainExamples(table)
    assert examples.__getitems__([1, 2, 3]) == [{"input_ids": [3], "labels": [6]},
                                              {"input_ids": [1, 2], "labels": [-100, -100]},
                                              {"input_ids": [3], "labels": [-100]}]


def test_shuffled_batches_are_the_epoch_order_cut_in_turn():
    """Batches are cut as they are drawn from the epoch's order held as an int32 array: the order EpochOrder gives
    (that of a resumed run), every example once, fillers last."""
    from textbox.data.batching import ShuffledBatchSampler

    sampler = ShuffledBatchSampler(1003, 10, seed=5, num_processes=3)
    sampler.set_epoch(2)
    batches = list(sampler)
    assert [index for batch in batches[:101] for index in batch] == list(sampler.sampler)
    assert len(batches) == len(sampler) == 102 and batches[101] == [1003 + index for index in batches[0]]
    assert all(type(index) is int for batch in batches for index in batch)
