"""Two-sided paired significance tests of a system against the baseline, on the same test examples.

BLEU, chrF and TER are handed to sacrebleu's own tests (sacrebleu.significance: the machinery of ``sacrebleu
--paired-bs`` / ``--paired-ar``), so a p-value here is sacrebleu's for the same files and seed. Every other figure
(rouge-*, meteor, em, f1) runs the same two algorithms here on its per-example statistics (example_stats.py):

- paired bootstrap resampling (Koehn 2004, as sacrebleu and Moses do it): ``samples`` resamples of the test set,
  both systems scored on each; the p-value is the share of resamples whose |difference|, centred on the mean
  |difference|, exceeds the observed |difference|, with +1 in numerator and denominator.
- approximate randomisation (Riezler and Maxwell 2005, as multeval and sacrebleu): ``samples`` trials, each
  swapping every example's outputs between the systems with probability 1/2; the p-value is the share of trials
  whose |difference| exceeds the observed one, +1 likewise.

Both are two-sided (they compare absolute differences), so a beating b and b beating a get the same p.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from textbox.analysis.example_stats import SACREBLEU_FIGURES, ExampleStatistics
from textbox.evaluator.metrics.sacrebleu_metrics import reference_streams, scorer

BOOTSTRAP, RANDOMISATION = "bs", "ar"
TEST_NAMES = {BOOTSTRAP: "paired bootstrap resampling", RANDOMISATION: "paired approximate randomisation"}
DEFAULT_SAMPLES = {BOOTSTRAP: 1000, RANDOMISATION: 10000}  # sacrebleu's --paired-bs-n and --paired-ar-n
DEFAULT_SEED = 12345  # sacrebleu's SACREBLEU_SEED when unset


@dataclass(frozen=True)
class Significance:
    """One test of a system against the baseline on one figure."""

    test: str  # "bs", "ar", "welch", "one-sample t"
    p_value: float | None  # None: the test cannot be run (a seed study of one seed)
    samples: int | None  # resamples or trials (None for t-tests)
    seed: int | None
    implementation: str


def bootstrap_indices(size: int, samples: int, seed: int) -> np.ndarray:
    """The example indices of each resample: the very draws sacrebleu's paired bootstrap makes with this seed."""
    return np.random.default_rng(seed).choice(size, size=(samples, size), replace=True)


def resampled_scores(statistics: ExampleStatistics, indices: np.ndarray) -> np.ndarray:
    return np.array([statistics.from_sums(statistics.rows[sample].sum(axis=0)) for sample in indices])


def bootstrap_interval(scores: np.ndarray) -> tuple[float, float]:
    """The 95% interval of resampled scores, with sacrebleu's order statistics (the n//40-th from each end).

    Each resample's score is a score the metric can give, so the interval stays in the figure's range.
    """
    ordered = np.sort(scores)
    tail = len(ordered) // 40
    return float(ordered[tail]), float(ordered[len(ordered) - tail - 1])


def paired_test(test: str, baseline: ExampleStatistics, system: ExampleStatistics, samples: int, seed: int,
                texts: tuple[list[str], list[str], list[list[str]]], options: Mapping[str, Any]) -> Significance:
    """``test`` (bs or ar) of ``system`` against ``baseline``; ``texts`` = (baseline outputs, system outputs,
    references), which sacrebleu's tests score themselves."""
    if baseline.figure in SACREBLEU_FIGURES:
        import sacrebleu

        p_value = _sacrebleu_p_value(test, baseline.figure, *texts, options, samples, seed)
        return Significance(test, p_value, samples, seed, f"sacrebleu {sacrebleu.__version__} significance")
    p_value = (bootstrap_p_value if test == BOOTSTRAP else randomisation_p_value)(baseline, system, samples, seed)
    return Significance(test, p_value, samples, seed, "textbox, on per-example statistics (sacrebleu's algorithm)")


def bootstrap_p_value(baseline: ExampleStatistics, system: ExampleStatistics, samples: int, seed: int) -> float:
    indices = bootstrap_indices(len(baseline.rows), samples, seed)
    observed = abs(system.score() - baseline.score())
    differences = np.abs(resampled_scores(system, indices) - resampled_scores(baseline, indices))
    return _p_value(differences - differences.mean(), observed)


def randomisation_p_value(baseline: ExampleStatistics, system: ExampleStatistics, samples: int, seed: int) -> float:
    swap = np.random.default_rng(seed).integers(2, size=(samples, len(baseline.rows)), dtype=bool)
    keep = ~swap
    shuffled_a = swap @ baseline.rows + keep @ system.rows
    shuffled_b = keep @ baseline.rows + swap @ system.rows
    differences = np.abs(np.array([baseline.from_sums(sums) for sums in shuffled_a])
                         - np.array([baseline.from_sums(sums) for sums in shuffled_b]))
    return _p_value(differences, abs(system.score() - baseline.score()))


def _p_value(statistics: np.ndarray, observed: float) -> float:
    """sacrebleu's (from multeval): strictly greater counts, +1 so that the test never rejects too often."""
    return (int(np.count_nonzero(statistics > observed)) + 1) / (len(statistics) + 1)


def _sacrebleu_p_value(test: str, figure: str, baseline_outputs: list[str], system_outputs: list[str],
                       references: list[list[str]], options: Mapping[str, Any], samples: int, seed: int) -> float:
    """sacrebleu's test function, set up as its PairedTest sets it up (baseline statistics and score first)."""
    from sacrebleu.significance import Result, _paired_ar_test, _paired_bs_test

    metric = scorer(figure, options)
    streams = reference_streams(references)
    baseline_stats = metric._extract_corpus_statistics(baseline_outputs, streams)
    baseline_score = metric._aggregate_and_compute(baseline_stats)
    name = baseline_score.name
    function = _paired_bs_test if test == BOOTSTRAP else _paired_ar_test
    _, results = function({name: (baseline_stats, Result(baseline_score.score))}, "system", system_outputs,
                          streams, {name: metric}, samples, -1, seed)  # type: ignore[arg-type]  # None pads streams
    p_value = results[name].p_value
    assert p_value is not None, "a paired test always gives a p-value"
    return float(p_value)


def seed_study_test(baseline: list[float], system: list[float], baseline_is_study: bool,
                    system_is_study: bool) -> Significance:
    """Seed studies compared by their per-seed figures: Welch's t-test (two studies: unequal variances), or a
    one-sample t-test of the study's seeds against the single system's figure. Both two-sided, from scipy."""
    from scipy import stats

    if baseline_is_study and system_is_study:
        if min(len(baseline), len(system)) < 2:
            return Significance("welch", None, None, None, "needs two seeds or more on each side")
        result = stats.ttest_ind(system, baseline, equal_var=False)
        return Significance("welch", _finite(result.pvalue), None, None, "scipy.stats.ttest_ind(equal_var=False)")
    study, single = (system, baseline[0]) if system_is_study else (baseline, system[0])
    if len(study) < 2:
        return Significance("one-sample t", None, None, None, "needs two seeds or more")
    result = stats.ttest_1samp(study, single)
    return Significance("one-sample t", _finite(result.pvalue), None, None, "scipy.stats.ttest_1samp against the "
                      "single system's figure (its own test-set variance not counted)")


def _finite(p_value: Any) -> float | None:
    """scipy gives nan when every seed has the same figure on both sides: no spread, no test."""
    value = float(p_value)
    return None if np.isnan(value) else value
