"""distinct-n, unique-n and novelty-n against values counted by hand."""
import pytest

from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics.base import MetricInputs
from textbox.evaluator.metrics.ngram_stats import distinct, novelty, unique

# Unigrams: a b a c | a b (6 in all, distinct: a b c = 3). Bigrams: ab ba ac | ab (4 in all, distinct 3).
HYPOTHESES = ["a b a c", "a b", ""]
REFERENCES = [["x"], ["y"], ["z"]]


def test_distinct_is_corpus_level_distinct_over_all_ngrams():
    scores = distinct(MetricInputs(HYPOTHESES, REFERENCES), {**DEFAULTS, "distinct_max_ngrams": 3}).scores
    assert scores == {"distinct-1": pytest.approx(50.0), "distinct-2": pytest.approx(75.0),
                      "distinct-3": pytest.approx(100.0)}  # trigrams: "a b a", "b a c"


def test_distinct_of_an_order_longer_than_every_text_is_zero():
    scores = distinct(MetricInputs(["a b"], [["x"]]), {**DEFAULTS, "distinct_max_ngrams": 3}).scores
    assert scores["distinct-3"] == 0.0


def test_unique_counts_distinct_ngrams():
    scores = unique(MetricInputs(HYPOTHESES, REFERENCES), {**DEFAULTS, "distinct_max_ngrams": 2}).scores
    assert scores == {"unique-1": 3.0, "unique-2": 3.0}


def test_novelty_counts_hypothesis_ngrams_missing_from_the_source():
    inputs = MetricInputs(["a b c a", "d d"], [["x"], ["y"]], sources=["a b x", "d"])
    scores = novelty(inputs, {**DEFAULTS, "novelty_max_ngrams": 2}).scores
    # Unigrams: c is new among a b c a, d d are both copied: 1 of 6. Bigrams: bc, ca and dd are new: 3 of 4.
    assert scores == {"novelty-1": pytest.approx(100 / 6), "novelty-2": pytest.approx(75.0)}


def test_novelty_of_copied_sources_is_zero():
    inputs = MetricInputs(["a b c"], [["x"]], sources=["a b c"])
    assert set(novelty(inputs, DEFAULTS).scores.values()) == {0.0}
