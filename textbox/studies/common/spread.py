"""One figure across independent runs (seeds): mean, std and the 95% t-interval of the mean, kept in the figure's
range. The seed study's summary and the analysis's seed-study systems both report it."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from textbox.evaluator.metrics import clip_interval

T_INTERVAL = ("95% t-interval of the mean: mean ± t(0.975, n-1) * std / sqrt(n), std with n-1, cut to the figure's "
              "range (e.g. [0, 100] for BLEU)")


@dataclass(frozen=True)
class Spread:
    """One figure across seeds; std and the interval need two seeds or more."""

    n: int
    mean: float
    std: float | None
    min: float
    max: float
    ci95_low: float | None
    ci95_high: float | None


def spread(values: list[float], bounds: tuple[float | None, float | None] = (None, None)) -> Spread:
    """The spread of one figure; ``bounds``, the figure's range, cut its interval: near a bound the symmetric
    t-interval would otherwise claim impossible values (a BLEU below 0)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return Spread(len(values), mean, None, min(values), max(values), None, None)
    from scipy.stats import t

    std = statistics.stdev(values)
    half_width = float(t.ppf(0.975, len(values) - 1)) * std / math.sqrt(len(values))
    low, high = clip_interval((mean - half_width, mean + half_width), bounds)
    return Spread(len(values), mean, std, min(values), max(values), low, high)
