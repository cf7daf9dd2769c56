"""self_bleu must equal the mean of sacrebleu.sentence_bleu of each hypothesis against all the others."""
from statistics import mean

import pytest
import sacrebleu

from textbox.config.errors import TextBoxUserError
from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics.base import MetricInputs
from textbox.evaluator.metrics.self_bleu import self_bleu


def run(hypotheses, **options):
    return self_bleu(MetricInputs(hypotheses, [["x"]] * len(hypotheses)), {**DEFAULTS, **options}).scores["self_bleu"]


def test_hand_computed_pair():
    # "a b" vs "a c": unigram precision 1/2, bigram 0/1 smoothed to 1/2, equal lengths: BLEU = 50 for both.
    assert run(["a b", "a c"]) == pytest.approx(50.0)


def test_identical_hypotheses_score_100():
    assert run(["the same text here"] * 3) == pytest.approx(100.0)


def test_equals_sacrebleu_sentence_bleu_on_repeats_ties_and_empty_lines():
    hypotheses = ["the cat sat on the mat", "the cat sat on the mat", "a cat on a mat", "", "the the the cat",
                  "dogs bark at night loudly", "a dog barks", "The Cat sat."]
    expected = mean(sacrebleu.sentence_bleu(h, hypotheses[:i] + hypotheses[i + 1:]).score
                    for i, h in enumerate(hypotheses))
    assert run(hypotheses) == pytest.approx(expected, abs=1e-9)
    expected_bigram = mean(sacrebleu.BLEU(max_ngram_order=2, effective_order=True)
                           .sentence_score(h, hypotheses[:i] + hypotheses[i + 1:]).score
                           for i, h in enumerate(hypotheses))
    assert run(hypotheses, bleu_max_ngrams=2) == pytest.approx(expected_bigram, abs=1e-9)


def test_needs_two_hypotheses():
    with pytest.raises(TextBoxUserError, match="at least 2"):
        run(["alone"])
