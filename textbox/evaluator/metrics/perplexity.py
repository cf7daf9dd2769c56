"""Perplexity from the model's mean token cross-entropy (it cannot be computed from text alone).

The one formula for it: the metric below and the trainer's loss-only validation both call perplexity_of."""
from __future__ import annotations

import math
import sys

from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, textbox_details

_LARGEST_EXPONENT = math.log(sys.float_info.max)  # ~709.78: exp of anything above overflows a float
OVERFLOW_NOTE = ("exp(loss) exceeds the largest float: the perplexity is infinite (a diverged model); JSON files "
                 "write it as null")


def perplexity_of(loss: float) -> float:
    """exp(loss): inf when that overflows a float (a diverged model), never an OverflowError; NaN stays NaN."""
    return math.inf if loss > _LARGEST_EXPONENT else math.exp(loss)


def perplexity(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """exp(loss), with the loss in nats per target token as the trainer reports it."""
    assert inputs.loss is not None, "the registry only calls perplexity with a loss"
    value = perplexity_of(inputs.loss)
    note = {"note": OVERFLOW_NOTE} if math.isinf(value) else {}
    return MetricResult({"perplexity": value}, textbox_details(loss=inputs.loss, **note))
