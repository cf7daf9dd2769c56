"""Length statistics in whitespace tokens: are outputs as long as the references?"""
from __future__ import annotations

from statistics import mean

from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, textbox_details


def length(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """length-hyp and length-ref: mean tokens per example (an example's references are averaged);
    length-ratio: their quotient (above 1: outputs longer than references)."""
    hypothesis_lengths = [len(text.split()) for text in inputs.hypotheses]
    reference_lengths = [mean(len(text.split()) for text in references) for references in inputs.references]
    mean_hypothesis, mean_reference = float(mean(hypothesis_lengths)), float(mean(reference_lengths))
    ratio = mean_hypothesis / mean_reference if mean_reference else float("inf")
    scores = {"length-hyp": mean_hypothesis, "length-ref": mean_reference, "length-ratio": ratio}
    return MetricResult(scores, textbox_details(tokenize="whitespace"))
