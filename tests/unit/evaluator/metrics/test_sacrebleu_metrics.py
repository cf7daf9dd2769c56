"""bleu, chrf, chrf++ and ter must equal sacrebleu's own corpus scores, multi-reference and empty lines included."""
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER

from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics.base import MetricInputs
from textbox.evaluator.metrics.sacrebleu_metrics import bleu, chrf, chrf_plus_plus, reference_streams, ter

HYPOTHESES = ["The cat sat on the mat.", "", "A man is playing a guitar on stage.", "Two dogs run"]
REFERENCES = [["The cat is sitting on the mat.", "A cat sat on the mat."],
              ["Nothing was said."],
              ["A man plays the guitar on a stage.", "Someone is playing guitar.", "A musician on stage."],
              ["Two dogs are running in the snow."]]
# The same references as sacrebleu streams: one per position, None where an example has fewer.
STREAMS = [[refs[k] if k < len(refs) else None for refs in REFERENCES] for k in range(3)]


def score(metric, **options):
    return metric(MetricInputs(HYPOTHESES, REFERENCES), {**DEFAULTS, **options})


def test_reference_streams_pad_missing_references_with_none():
    assert reference_streams([["a", "b"], ["c"]]) == [["a", "c"], ["b", None]]


def test_bleu_equals_sacrebleu_corpus_bleu_with_variable_references():
    expected = sacrebleu.corpus_bleu(HYPOTHESES, STREAMS)
    result = score(bleu)
    assert result.scores["bleu"] == pytest.approx(expected.score, abs=1e-9)
    assert result.details["signature"].startswith("nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp")


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_bleu_n_equals_sacrebleu_with_that_max_order(order):
    expected = BLEU(max_ngram_order=order).corpus_score(HYPOTHESES, STREAMS).score
    assert score(bleu).scores[f"bleu-{order}"] == pytest.approx(expected, abs=1e-9)


def test_bleu_options_reach_sacrebleu():
    result = score(bleu, bleu_max_ngrams=2, bleu_tokenize="char", lower_evaluation=True)
    expected = BLEU(max_ngram_order=2, tokenize="char", lowercase=True).corpus_score(HYPOTHESES, STREAMS)
    assert list(result.scores) == ["bleu", "bleu-1", "bleu-2"]
    assert result.scores["bleu"] == pytest.approx(expected.score, abs=1e-9)
    assert "case:lc" in result.details["signature"] and "tok:char" in result.details["signature"]


def test_bleu_of_only_empty_hypotheses_is_zero():
    result = bleu(MetricInputs(["", ""], [["a b c"], ["d e"]]), DEFAULTS)
    assert result.scores["bleu"] == 0.0 == sacrebleu.corpus_bleu(["", ""], [["a b c", "d e"]]).score


def test_chrf_and_chrf_plus_plus_equal_sacrebleu():
    assert score(chrf).scores["chrf"] == pytest.approx(CHRF().corpus_score(HYPOTHESES, STREAMS).score)
    expected = CHRF(word_order=2).corpus_score(HYPOTHESES, STREAMS).score
    assert score(chrf_plus_plus).scores["chrf++"] == pytest.approx(expected)


def test_ter_equals_sacrebleu():
    assert score(ter).scores["ter"] == pytest.approx(TER().corpus_score(HYPOTHESES, STREAMS).score)
