"""Quantile buckets of source length: does a run fall behind on long inputs?"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def word_counts(texts: Sequence[str]) -> np.ndarray:
    return np.array([len(text.split()) for text in texts])


def length_buckets(lengths: np.ndarray, count: int) -> list[np.ndarray]:
    """Example indices of each bucket, shortest first: quantile buckets of ``lengths``, ``count`` at most.

    Examples of equal length always share a bucket, so lengths with heavy ties give fewer, uneven buckets
    rather than buckets whose length ranges overlap.
    """
    edges = np.unique(np.quantile(lengths, np.arange(1, count) / count))
    assignment = np.searchsorted(edges, lengths, side="left")  # bucket k holds edges[k-1] < length <= edges[k]
    return [np.flatnonzero(assignment == bucket) for bucket in range(len(edges) + 1)
            if np.any(assignment == bucket)]
