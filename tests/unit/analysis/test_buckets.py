"""Quantile buckets of source length."""
import numpy as np

from textbox.analysis.buckets import length_buckets, word_counts


def as_lists(buckets):
    return [bucket.tolist() for bucket in buckets]


def test_word_counts_split_on_whitespace():
    assert word_counts(["a b  c", "", " d "]).tolist() == [3, 0, 1]


def test_distinct_lengths_split_into_equal_quartiles():
    lengths = np.array([5, 1, 8, 3, 2, 7, 4, 6])
    assert as_lists(length_buckets(lengths, 4)) == [[1, 4], [3, 6], [0, 7], [2, 5]]


def test_every_example_is_in_exactly_one_bucket_ordered_by_length():
    lengths = np.random.default_rng(0).integers(1, 40, size=101)
    buckets = length_buckets(lengths, 5)
    assert sorted(index for bucket in buckets for index in bucket) == list(range(101))
    for shorter, longer in zip(buckets, buckets[1:]):
        assert lengths[shorter].max() < lengths[longer].min()


def test_equal_lengths_share_a_bucket_so_ties_give_fewer_buckets():
    lengths = np.array([1, 1, 1, 1, 1, 1, 9, 9])
    assert as_lists(length_buckets(lengths, 4)) == [[0, 1, 2, 3, 4, 5], [6, 7]]
    assert as_lists(length_buckets(np.array([3, 3, 3]), 4)) == [[0, 1, 2]]


def test_one_bucket_holds_everything():
    assert as_lists(length_buckets(np.array([4, 2, 9]), 1)) == [[0, 1, 2]]
