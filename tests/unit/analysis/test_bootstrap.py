"""Bootstrap resampling and Koehn's paired test, on cases whose answer is known."""
import numpy as np
import pytest
import sacrebleu

from textbox.analysis.bootstrap import paired_test, percentile_interval, resample_scores
from textbox.analysis.example_stats import ExampleStatistics, example_statistics
from textbox.config.schema import DEFAULTS


def mean_figure(scores, higher_is_better=True) -> ExampleStatistics:
    """A figure that is the mean of the given per-example scores (as rouge or f1 are)."""
    scores = np.asarray(scores, dtype=float)
    rows = np.column_stack([scores, np.ones(len(scores))])
    return ExampleStatistics("f1", higher_is_better, rows, lambda sums: sums[0] / sums[1], scores, "mean")


def test_b_better_on_every_example_gives_p_zero_and_a_positive_interval():
    rng = np.random.default_rng(1)
    a_scores = rng.uniform(0, 50, size=60)
    a, b = mean_figure(a_scores), mean_figure(a_scores + rng.uniform(0.1, 2, size=60))
    resampled = resample_scores([a, b], samples=500, seed=0)
    test = paired_test(a, b, resampled[:, 0], resampled[:, 1])
    assert test.p_value == 0.0
    assert 0 < test.interval[0] < test.difference < test.interval[1]


def test_identical_runs_give_p_one_half_and_an_interval_of_zero():
    a = mean_figure(np.random.default_rng(2).uniform(0, 100, size=40))
    resampled = resample_scores([a, a], samples=300, seed=0)
    test = paired_test(a, a, resampled[:, 0], resampled[:, 1])
    assert test.p_value == 0.5
    assert test.interval == (0.0, 0.0) and test.difference == 0.0


def test_runs_equal_on_average_but_not_per_example_give_p_near_one_half():
    a, b = mean_figure([0.0, 100.0] * 100), mean_figure([100.0, 0.0] * 100)
    resampled = resample_scores([a, b], samples=2000, seed=3)
    test = paired_test(a, b, resampled[:, 0], resampled[:, 1])
    assert test.difference == 0.0
    assert test.p_value == pytest.approx(0.5, abs=0.05)
    assert test.interval[0] < 0 < test.interval[1]


def test_lower_is_better_figures_count_a_decrease_as_a_win():
    a = mean_figure([50.0, 40.0, 60.0, 55.0] * 10, higher_is_better=False)
    b = mean_figure([45.0, 30.0, 59.0, 50.0] * 10, higher_is_better=False)
    resampled = resample_scores([a, b], samples=200, seed=0)
    test = paired_test(a, b, resampled[:, 0], resampled[:, 1])
    assert test.p_value == 0.0 and test.difference < 0


def test_interval_of_a_mean_matches_the_normal_approximation():
    scores = np.random.default_rng(4).exponential(20, size=400)
    resampled = resample_scores([mean_figure(scores)], samples=4000, seed=5)
    low, high = percentile_interval(resampled[:, 0])
    half_width = 1.96 * scores.std() / np.sqrt(len(scores))
    assert (high - low) / 2 == pytest.approx(half_width, rel=0.1)
    assert (low + high) / 2 == pytest.approx(scores.mean(), abs=0.2 * half_width)


def test_a_resample_scores_as_sacrebleu_scores_the_drawn_examples():
    hypotheses = ["a b c d", "e f g", "a b x d", "q r s t u", "e f"]
    references = [["a b c d"], ["e f g h"], ["a b c d"], ["q r s t"], ["e f g"]]
    statistics = example_statistics("bleu", hypotheses, references, DEFAULTS)
    resampled = resample_scores([statistics], samples=5, seed=7)
    rng = np.random.default_rng(7)  # the same draws resample_scores makes
    for sample in range(5):
        drawn = rng.integers(0, 5, 5)
        expected = sacrebleu.corpus_bleu([hypotheses[i] for i in drawn], [[references[i][0] for i in drawn]])
        assert resampled[sample, 0] == pytest.approx(expected.score, abs=1e-9)


def test_the_same_seed_gives_the_same_resamples():
    a = mean_figure(np.arange(30.0))
    assert np.array_equal(resample_scores([a], 50, seed=9), resample_scores([a], 50, seed=9))
    assert not np.array_equal(resample_scores([a], 50, seed=9), resample_scores([a], 50, seed=10))
