"""em and f1 with SQuAD normalisation, checked by hand."""
import pytest

from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics.base import MetricInputs
from textbox.evaluator.metrics.squad import exact_match, f1, normalize_answer, token_f1


def test_normalize_answer_drops_case_punctuation_and_articles():
    assert normalize_answer("The  Eiffel-Tower, in an instant!") == "eiffeltower in instant"


def test_token_f1_by_hand():
    # hypothesis: eiffel tower paris ; reference: tower in paris -> overlap 2, P = 2/3, R = 2/3
    assert token_f1("The Eiffel Tower, Paris", "tower in Paris") == pytest.approx(2 / 3)
    assert token_f1("", "") == 1.0
    assert token_f1("", "paris") == 0.0
    assert token_f1("london", "paris") == 0.0


def test_em_and_f1_take_the_best_reference_and_average_in_percent():
    inputs = MetricInputs(["Paris.", "in the tower", ""],
                          [["London", "paris"], ["tower of london"], ["something"]])
    assert exact_match(inputs, DEFAULTS).scores == {"em": pytest.approx(100 / 3)}
    # f1 of example 2: "in tower" vs "tower of london": overlap 1, P = 1/2, R = 1/3, F = 0.4
    assert f1(inputs, DEFAULTS).scores == {"f1": pytest.approx(100 * (1 + 0.4 + 0) / 3)}
