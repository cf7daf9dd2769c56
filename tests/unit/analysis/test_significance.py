"""The paired tests against sacrebleu's own (significance.PairedTest, the machinery of --paired-bs/--paired-ar):
the same p-values for BLEU and chrF, ours the same algorithm on per-example statistics, both two-sided."""
import random

import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from textbox.analysis.example_stats import ExampleStatistics, example_statistics
from textbox.analysis.significance import (bootstrap_indices, bootstrap_interval, bootstrap_p_value, paired_test,
                                           randomisation_p_value, resampled_scores, seed_study_test)
from textbox.config.schema import DEFAULTS

WORDS = "a b c d e f g h i j".split()


def noisy(references: list[str], keep: float, rng: random.Random) -> list[str]:
    return [" ".join(word if rng.random() < keep else "x" for word in line.split()) for line in references]


@pytest.fixture(scope="module")
def texts() -> tuple[list[str], list[str], list[list[str]]]:
    """Two systems close enough that p is neither tiny nor 1: 0.6 and 0.63 of the words right."""
    rng = random.Random(3)
    references = [" ".join(rng.choices(WORDS, k=rng.randint(4, 10))) for _ in range(40)]
    return noisy(references, 0.6, rng), noisy(references, 0.63, rng), [[line] for line in references]


def sacrebleu_p(test: str, metric, a: list[str], b: list[str], references, samples: int, seed: int, monkeypatch):
    monkeypatch.setenv("SACREBLEU_SEED", str(seed))
    _, scores = PairedTest([("a", a), ("b", b)], {"m": metric}, [[r[0] for r in references]], test_type=test,
                           n_samples=samples)()
    [column] = [name for name in scores if name != "System"]
    return scores[column][1].p_value


@pytest.mark.parametrize("figure, metric", [("bleu", BLEU()), ("chrf", CHRF())])
@pytest.mark.parametrize("test, samples", [("bs", 300), ("ar", 400)])
def test_p_values_equal_sacrebleus_and_ours_is_the_same_algorithm(texts, monkeypatch, figure, metric, test, samples):
    a, b, references = texts
    statistics = [example_statistics(figure, outputs, references, DEFAULTS) for outputs in (a, b)]
    expected = sacrebleu_p(test, metric, a, b, references, samples, 777, monkeypatch)
    result = paired_test(test, *statistics, samples, 777, (a, b, references), DEFAULTS)
    assert result.p_value == expected and 0.01 < expected < 0.99
    assert result.implementation.startswith("sacrebleu")
    ours = (bootstrap_p_value if test == "bs" else randomisation_p_value)(*statistics, samples, 777)
    assert ours == pytest.approx(expected, abs=1e-12)  # the algorithm ROUGE, METEOR, ... go through


@pytest.mark.parametrize("figure", ["bleu", "f1"])  # sacrebleu's and ours
@pytest.mark.parametrize("test", ["bs", "ar"])
def test_the_tests_are_two_sided_a_against_b_gives_b_against_as_p(texts, figure, test):
    a, b, references = texts
    stats_a, stats_b = (example_statistics(figure, outputs, references, DEFAULTS) for outputs in (a, b))
    forward = paired_test(test, stats_a, stats_b, 200, 5, (a, b, references), DEFAULTS).p_value
    backward = paired_test(test, stats_b, stats_a, 200, 5, (b, a, references), DEFAULTS).p_value
    assert forward == backward


def test_resamples_are_the_examples_sacrebleu_draws_and_score_as_corpus_bleu():
    hypotheses = ["a b c d", "e f g", "a b x d", "q r s t u", "e f"]
    references = [["a b c d"], ["e f g h"], ["a b c d"], ["q r s t"], ["e f g"]]
    statistics = example_statistics("bleu", hypotheses, references, DEFAULTS)
    indices = bootstrap_indices(5, 6, seed=7)
    assert np.array_equal(indices, np.random.default_rng(7).choice(5, size=(6, 5), replace=True))
    for drawn, score in zip(indices, resampled_scores(statistics, indices)):
        expected = sacrebleu.corpus_bleu([hypotheses[i] for i in drawn], [[references[i][0] for i in drawn]])
        assert score == pytest.approx(expected.score, abs=1e-9)


def mean_figure(scores) -> ExampleStatistics:
    scores = np.asarray(scores, dtype=float)
    rows = np.column_stack([scores, np.ones(len(scores))])
    return ExampleStatistics("f1", True, rows, lambda sums: sums[0] / sums[1], scores, "mean")


def test_the_interval_of_a_mean_matches_the_normal_approximation_and_stays_in_range():
    scores = np.random.default_rng(4).exponential(20, size=400)
    low, high = bootstrap_interval(resampled_scores(mean_figure(scores), bootstrap_indices(400, 2000, 5)))
    half_width = 1.96 * scores.std() / np.sqrt(len(scores))
    assert (high - low) / 2 == pytest.approx(half_width, rel=0.1)
    assert (low + high) / 2 == pytest.approx(scores.mean(), abs=0.2 * half_width)
    nearly_zero = mean_figure([0.0] * 95 + [100.0] * 5)  # a t- or normal interval would go below 0
    low, high = bootstrap_interval(resampled_scores(nearly_zero, bootstrap_indices(100, 1000, 5)))
    assert 0.0 <= low < 5.0 < high <= 100.0


def test_seed_studies_are_compared_by_welch_or_a_one_sample_t_test():
    from scipy import stats

    a, b = [20.0, 21.5, 19.0], [23.0, 22.0, 24.5, 23.5]
    welch = seed_study_test(a, b, True, True)
    assert (welch.test, welch.p_value) == ("welch", pytest.approx(stats.ttest_ind(b, a, equal_var=False).pvalue))
    assert seed_study_test(b, a, True, True).p_value == pytest.approx(welch.p_value)  # two-sided
    single = seed_study_test([22.0], b, False, True)
    assert (single.test, single.p_value) == ("one-sample t", pytest.approx(stats.ttest_1samp(b, 22.0).pvalue))
    assert seed_study_test(a, [5.0], True, True).p_value is None  # one seed: no spread, no test
