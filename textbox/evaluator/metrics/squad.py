"""Exact match and token F1 with the SQuAD evaluation script's answer normalisation, best over references."""
from __future__ import annotations

import re
import string
from collections import Counter
from statistics import mean

from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, textbox_details
from textbox.evaluator.metrics.rouge import combine_references

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)
_NORMALISATION = "SQuAD: lowercase, drop punctuation and articles (a, an, the), collapse whitespace"


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation, so that 'The cat.' and 'cat' count as the same answer."""
    text = "".join(char for char in text.lower() if char not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(hypothesis: str, reference: str) -> float:
    """Harmonic mean of token precision and recall; two empty answers agree (SQuAD 2.0's no-answer rule)."""
    hypothesis_tokens = normalize_answer(hypothesis).split()
    reference_tokens = normalize_answer(reference).split()
    if not hypothesis_tokens or not reference_tokens:
        return float(hypothesis_tokens == reference_tokens)
    overlap = sum((Counter(hypothesis_tokens) & Counter(reference_tokens)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(hypothesis_tokens)
    recall = overlap / len(reference_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """em: percent of hypotheses equal to some reference after normalisation."""
    matches = [max(float(normalize_answer(hypothesis) == normalize_answer(reference)) for reference in references)
               for hypothesis, references in zip(inputs.hypotheses, inputs.references)]
    return MetricResult({"em": 100 * mean(matches)}, textbox_details(normalisation=_NORMALISATION))


def qa(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """TextBox 2.0's qa: em and f1 together, several references combined by multiref_strategy (max, or
    leave_one_out as CoQA's official script does)."""

    strategy = options["multiref_strategy"]
    matches, overlaps = [], []
    for hypothesis, references in zip(inputs.hypotheses, inputs.references):
        matches.append(combine_references([float(normalize_answer(hypothesis) == normalize_answer(reference))
                                           for reference in references], strategy))
        overlaps.append(combine_references([token_f1(hypothesis, reference) for reference in references], strategy))
    details = textbox_details(normalisation=_NORMALISATION, multiref_strategy=strategy)
    return MetricResult({"em": 100 * mean(matches), "f1": 100 * mean(overlaps)}, details)


def f1(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """f1: mean over examples of the best token F1 against any reference, in percent."""
    scores = [max(token_f1(hypothesis, reference) for reference in references)
              for hypothesis, references in zip(inputs.hypotheses, inputs.references)]
    return MetricResult({"f1": 100 * mean(scores)}, textbox_details(normalisation=_NORMALISATION))
