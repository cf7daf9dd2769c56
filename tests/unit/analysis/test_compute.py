"""What the report shows, checked against the metric suite on the same examples."""
from pathlib import Path

import numpy as np
import pytest

from tests.unit.analysis.fake_runs import write_dataset, write_run
from textbox.analysis.compute import analyze
from textbox.analysis.systems import load_systems
from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics import compute_metrics

SOURCES = ["a", "b c", "d e f", "g h i j", "k l m n o", "p q r s t u"]
REFERENCES = ["x", "y z", "w v u", "t s r q", "p o n m l", "k j i h g f"]
HYPOTHESES_A = ["x", "y", "w v", "t s", "p o", "k j i h g f"]
HYPOTHESES_B = ["x", "y z", "w v u", "t s r", "q", "k j i h g f"]


@pytest.fixture
def analysis(tmp_path: Path):
    data = write_dataset(tmp_path / "data", SOURCES, REFERENCES)
    run_a = write_run(tmp_path / "a", data, HYPOTHESES_A)
    run_b = write_run(tmp_path / "b", data, HYPOTHESES_B, rouge_use_stemmer=False)
    systems, test_set = load_systems([str(run_a), str(run_b)], [], None, None)
    return analyze(systems, test_set, ["rouge-1"], ["bs", "ar"], {"bs": 100, "ar": 100}, seed=0, buckets=3)


def test_bucket_scores_equal_the_metric_suite_on_the_buckets_examples(analysis):
    buckets = analysis.detail.buckets
    assert [(bucket.label, bucket.size) for bucket in buckets] == [("1-2", 2), ("3-4", 2), ("5-6", 2)]
    for bucket, members in zip(buckets, ([0, 1], [2, 3], [4, 5])):
        for run, hypotheses in enumerate((HYPOTHESES_A, HYPOTHESES_B)):
            expected = compute_metrics(["rouge"], [hypotheses[i] for i in members],
                                       [[REFERENCES[i]] for i in members], options=DEFAULTS).scores["rouge-1"]
            assert bucket.scores[run] == pytest.approx(expected)
        assert bucket.hypothesis_words[0] == np.mean([len(HYPOTHESES_A[i].split()) for i in members])
        assert bucket.reference_words == np.mean([len(REFERENCES[i].split()) for i in members])


def test_examples_are_ordered_by_how_much_the_runs_differ(analysis):
    statistics = analysis.detail.statistics
    gaps = np.abs(statistics[1].sentence_scores - statistics[0].sentence_scores)
    shown = analysis.detail.notable_examples(10)
    assert shown[0] == 4  # "p o" -> "q": the only example b gets wrong, and by most
    assert list(gaps[shown]) == sorted(gaps[shown], reverse=True)
    assert 0 not in shown and 5 not in shown  # equal in both runs


def test_metric_options_that_differ_are_listed_and_a_s_are_used(analysis):
    [difference] = analysis.option_differences
    assert difference.endswith("b: rouge_use_stemmer=False (scored with True)")
    assert analysis.systems[1].runs[0].config.rouge_use_stemmer is False
    expected = compute_metrics(["rouge"], HYPOTHESES_B, [[reference] for reference in REFERENCES], options=DEFAULTS)
    assert analysis.figures[0].scores[1].score == pytest.approx(expected.scores["rouge-1"])
