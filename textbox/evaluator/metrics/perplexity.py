"""Perplexity from the model's mean token cross-entropy (it cannot be computed from text alone)."""
from __future__ import annotations

import math
from typing import Any, Mapping

from textbox.evaluator.metrics.base import MetricInputs, MetricResult, textbox_details


def perplexity(inputs: MetricInputs, options: Mapping[str, Any]) -> MetricResult:
    """exp(loss), with the loss in nats per target token as the trainer reports it."""
    assert inputs.loss is not None, "the registry only calls perplexity with a loss"
    return MetricResult({"perplexity": math.exp(inputs.loss)}, textbox_details(loss=inputs.loss))
