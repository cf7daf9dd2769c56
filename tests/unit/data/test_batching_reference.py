"""The token-budget sampler cuts its batches from counts of lengths (textbox.data.batching._cut_runs): its batches,
their order, fillers and padding figure must equal those of the walk over every example it replaced, kept here
as the reference."""
from __future__ import annotations

import numpy as np
import pytest

from textbox.config.errors import ConfigError
from textbox.data.batching import TokenBudgetBatchSampler, _cut_by_budget, padding_fraction

WIDTHS = (1, 2, 3, 4, 6, 8, 12, 16)


def _reference_cut(sources: np.ndarray, targets: np.ndarray, max_tokens: int) -> list[tuple[int, int]]:
    """The per-example greedy cut as it was (textbox 34d: a Python loop over every example)."""
    spans, start, longest_source, longest_target = [], 0, 0, 0
    for position, (source, target) in enumerate(zip(sources.tolist(), targets.tolist())):
        if source + target > max_tokens:
            raise ConfigError([f"--max_tokens={max_tokens} is smaller than one example of {source} source + "
                               f"{target} target tokens; raise --max_tokens to at least src_len + tgt_len"])
        grown_source, grown_target = max(longest_source, source), max(longest_target, target)
        if (position - start + 1) * (grown_source + grown_target) > max_tokens:
            spans.append((start, position))
            start, grown_source, grown_target = position, source, target
        longest_source, longest_target = grown_source, grown_target
    if start < len(sources):
        spans.append((start, len(sources)))
    return spans


def _reference_keys(sources: np.ndarray, targets: np.ndarray, width: int) -> tuple[np.ndarray, ...]:
    bucket = sources // width
    target = np.where(bucket % 2 == 0, targets, -targets)
    return np.where((bucket + target) % 2 == 0, sources, -sources), target, bucket


def _reference_batches(sources: np.ndarray, targets: np.ndarray, max_tokens: int, seed: int, epoch: int,
                       processes: int) -> tuple[list[list[int]], float]:
    """An epoch's batches (fillers last) and the padding fraction of the real ones, as the sampler made them."""
    least_padded, chosen, spans = None, 0, []
    for width in WIDTHS:
        order = np.lexsort(_reference_keys(sources, targets, width))
        walk_sources, walk_targets = sources[order], targets[order]
        cut = _reference_cut(walk_sources, walk_targets, max_tokens)
        padded = sum((end - start) * int(walk_sources[start:end].max() + walk_targets[start:end].max())
                     for start, end in cut)
        if least_padded is None or padded < least_padded:
            least_padded, chosen, spans = padded, width, cut
    rng = np.random.default_rng((seed, epoch))
    shuffled = rng.permutation(len(sources))
    order = shuffled[np.lexsort(_reference_keys(sources[shuffled], targets[shuffled], chosen))]
    batches = [order[start:end].tolist() for start, end in (spans[i] for i in rng.permutation(len(spans)))]
    real = len(batches)
    batches += [[len(sources) + index for index in batches[k % real]] for k in range(-real % processes)]
    return batches, 1.0 - int(sources.sum() + targets.sum()) / max(least_padded or 0, 1)


def _random_lengths(kind: str, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "dense":  # many examples per (source, target) length
        sources = rng.integers(5, 61, count)
        return sources, np.clip(sources + rng.integers(-10, 11, count), 5, 60)
    if kind == "sparse":  # few per length: wide buckets win
        return rng.integers(10, 97, count), rng.integers(1, 25, count)
    return rng.integers(0, 4, count), rng.integers(0, 3, count)  # tiny, zero lengths included


@pytest.mark.parametrize("kind, max_tokens", [("dense", 512), ("dense", 121), ("sparse", 2048), ("tiny", 9)])
def test_batches_and_padding_equal_the_per_example_walk(kind: str, max_tokens: int):
    for seed in (0, 1):
        sources, targets = _random_lengths(kind, 1500 + 101 * seed, seed)
        for processes in (1, 3):
            sampler = TokenBudgetBatchSampler(sources, targets, max_tokens, seed=seed, num_processes=processes)
            for epoch in (0, 2):
                sampler.set_epoch(epoch)
                expected, fraction = _reference_batches(sources, targets, max_tokens, seed, epoch, processes)
                assert sampler.batches() == expected and len(sampler) == len(expected)
                assert sampler.padding_fraction() == fraction
                assert padding_fraction(expected[:sampler.real_batches], sources, targets) == pytest.approx(fraction)


def test_the_cut_of_an_unsorted_sequence_equals_the_per_example_walk():
    """Evaluation cuts lengths in its own order (longest first) through the same runs."""
    for seed in range(3):
        sources, targets = _random_lengths("tiny" if seed == 2 else "dense", 700, seed)
        runs = np.repeat(np.arange(len(sources)), np.random.default_rng(seed).integers(1, 4, len(sources)))
        for max_tokens in (9, 130, 1000):
            if seed != 2 and max_tokens == 9:
                continue
            assert _cut_by_budget(sources[runs], targets[runs], max_tokens, "max_tokens") == \
                _reference_cut(sources[runs], targets[runs], max_tokens)


def test_the_too_long_example_named_is_the_one_the_walk_met_first():
    sources, targets = _random_lengths("dense", 500, 4)
    with pytest.raises(ConfigError) as expected:
        _reference_batches(sources, targets, 90, 0, 0, 1)
    with pytest.raises(ConfigError) as refused:
        TokenBudgetBatchSampler(sources, targets, 90, seed=0)
    assert str(refused.value) == str(expected.value)


def test_many_distinct_lengths_give_the_same_batches():
    """Over 2**15 distinct (source, target) lengths and too many possible ones for a table of counts."""
    rng = np.random.default_rng(7)
    sources, targets = rng.integers(0, 5000, 36000), rng.integers(0, 3000, 36000)
    sampler = TokenBudgetBatchSampler(sources, targets, 9000, seed=2, num_processes=2)
    sampler.set_epoch(1)
    expected, fraction = _reference_batches(sources, targets, 9000, 2, 1, 2)
    assert sampler.batches() == expected and sampler.padding_fraction() == fraction


def test_no_examples_no_batches():
    sampler = TokenBudgetBatchSampler(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 64, seed=0)
    assert sampler.batches() == [] and len(sampler) == sampler.real_batches == 0


def test_the_trainer_logs_the_padding_of_the_epochs_batches():
    """The --max_tokens log line's figure, computed from the cut, is that of the batches the epoch trains on."""
    import datasets
    from accelerate import Accelerator

    from textbox.config.loader import Config
    from textbox.config.schema import DEFAULTS
    from textbox.trainer.loaders import train_loader

    sources, targets = _random_lengths("dense", 300, 3)
    data = datasets.Dataset.from_dict({"input_ids": [[5] * n for n in sources], "labels": [[6] * n for n in targets]})
    lines: list[str] = []
    train_loader(Config({**DEFAULTS, "max_tokens": 400}), Accelerator(cpu=True), data, list, lines.append)
    batches = TokenBudgetBatchSampler(sources, targets, 400, seed=DEFAULTS["seed"]).batches()
    assert lines == [f"max_tokens=400: {len(batches)} batches per epoch of {300 / len(batches):.1f} examples on "
                     f"average, {padding_fraction(batches, sources, targets):.1%} of their tokens padding"]
