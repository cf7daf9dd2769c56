"""Bootstrap resampling of test sets (Koehn 2004): confidence intervals and the paired significance test.

Every run is scored on the same resamples of example indices, so that the runs' scores pair up and their
difference in one resample is a difference on the same examples.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from textbox.analysis.example_stats import ExampleStatistics

CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairedTest:
    """Whether run b beats run a on the figure, from paired resamples."""

    difference: float  # b - a on the whole test set
    interval: tuple[float, float]  # 95% percentile interval of b - a over the resamples
    p_value: float  # share of resamples in which b does not beat a, ties counted half: a one-sided test
    differences: np.ndarray  # b - a in each resample (for the plot)


def resample_scores(runs: Sequence[ExampleStatistics], samples: int, seed: int) -> np.ndarray:
    """scores[s, r]: run r's figure on resample s; each resample draws as many examples as the test set has."""
    rng = np.random.default_rng(seed)
    size = len(runs[0].rows)
    scores = np.empty((samples, len(runs)))
    for sample in range(samples):
        weights = np.bincount(rng.integers(0, size, size), minlength=size)
        scores[sample] = [run.score(weights) for run in runs]
    return scores


def percentile_interval(values: np.ndarray) -> tuple[float, float]:
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def paired_test(a: ExampleStatistics, b: ExampleStatistics, scores_a: np.ndarray,
                scores_b: np.ndarray) -> PairedTest:
    """Koehn's paired bootstrap on resampled scores: a small p-value says b's advantage is no luck of the draw.

    Ties count half, so two identical runs get p = 0.5 rather than p = 1 (or 0, counting ties the other way).
    """
    differences = scores_b - scores_a
    gains = differences if a.higher_is_better else -differences
    p_value = (np.count_nonzero(gains < 0) + 0.5 * np.count_nonzero(gains == 0)) / len(gains)
    return PairedTest(b.score() - a.score(), percentile_interval(differences), float(p_value), differences)
