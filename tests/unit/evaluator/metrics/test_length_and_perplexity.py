"""Length statistics and perplexity, by hand."""
import math

import pytest

from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics.base import MetricInputs
from textbox.evaluator.metrics.length import length
from textbox.evaluator.metrics.perplexity import perplexity


def test_length_averages_each_examples_references():
    inputs = MetricInputs(["a b c", ""], [["a b", "a b c d"], ["x y"]])
    # hypotheses: (3 + 0) / 2 = 1.5; references: ((2 + 4) / 2 + 2) / 2 = 2.5
    assert length(inputs, DEFAULTS).scores == {"length-hyp": 1.5, "length-ref": 2.5,
                                               "length-ratio": pytest.approx(0.6)}


def test_perplexity_is_exp_of_the_loss():
    result = perplexity(MetricInputs(["a"], [["a"]], loss=2.0), DEFAULTS)
    assert result.scores == {"perplexity": pytest.approx(math.exp(2.0))}


@pytest.mark.parametrize("loss", [709.0, 710.0, 1e6, math.inf])
def test_perplexity_of_a_diverged_model_is_inf_not_an_overflow(loss):
    """math.exp raises OverflowError above ~709.78: a diverged model's perplexity is inf, and its details say so."""
    result = perplexity(MetricInputs(["a"], [["a"]], loss=loss), DEFAULTS)
    if loss < 709.7:
        assert math.isfinite(result.scores["perplexity"]) and "note" not in result.details
    else:
        assert result.scores == {"perplexity": math.inf}
        assert "infinite" in result.details["note"]


def test_perplexity_of_a_nan_loss_is_nan():
    assert math.isnan(perplexity(MetricInputs(["a"], [["a"]], loss=math.nan), DEFAULTS).scores["perplexity"])
