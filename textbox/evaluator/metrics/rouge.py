"""ROUGE-N, ROUGE-L and ROUGE-Lsum F-measures from rouge-score (ROUGE-W: rouge_w.py), averaged over examples, 0-100.

rouge-score compares one reference at a time; ``multiref_strategy`` says how several are combined.
rouge-lsum splits summaries into sentences at newlines only (rouge-score's rule; its sentence splitter needs
NLTK data that is not available offline), so for one-line outputs it equals rouge-l.
"""
from __future__ import annotations

from importlib.metadata import version
from statistics import mean
from typing import Any, Mapping

from textbox.evaluator.metrics.base import MetricInputs, MetricResult, package_details
from textbox.evaluator.metrics.rouge_w import WEIGHT, rouge_w


def rouge_figures(max_order: int) -> dict[str, str]:
    """Our figure name -> rouge-score's rouge type."""
    figures = {f"rouge-{order}": f"rouge{order}" for order in range(1, max_order + 1)}
    return {**figures, "rouge-l": "rougeL", "rouge-lsum": "rougeLsum", "rouge-w": "rougeW"}


def combine_references(fmeasures: list[float], strategy: str) -> float:
    """One example's score from its per-reference F-measures.

    leave_one_out (jackknifing) makes scores with K references comparable to human scores computed with K-1.
    """
    if strategy == "max" or len(fmeasures) == 1:
        return max(fmeasures)
    return mean(max(fmeasures[:k] + fmeasures[k + 1:]) for k in range(len(fmeasures)))


def rouge(inputs: MetricInputs, options: Mapping[str, Any]) -> MetricResult:
    """rouge-1..rouge-N, rouge-l and rouge-lsum, each the mean of per-example F-measures."""
    from rouge_score.rouge_scorer import RougeScorer
    from rouge_score.tokenizers import DefaultTokenizer

    figures = rouge_figures(options["rouge_max_ngrams"])
    strategy = options["multiref_strategy"]
    scored = {name: rouge_type for name, rouge_type in figures.items() if name != "rouge-w"}
    scorer = RougeScorer(list(scored.values()), use_stemmer=options["rouge_use_stemmer"])
    tokenizer = DefaultTokenizer(use_stemmer=options["rouge_use_stemmer"])  # rouge-score's tokens for ROUGE-W
    per_example: dict[str, list[float]] = {name: [] for name in figures}
    for hypothesis, references in zip(inputs.hypotheses, inputs.references):
        pair_scores = [scorer.score(reference, hypothesis) for reference in references]
        for name, rouge_type in scored.items():
            fmeasures = [scores[rouge_type].fmeasure for scores in pair_scores]
            per_example[name].append(combine_references(fmeasures, strategy))
        tokens = tokenizer.tokenize(hypothesis)
        per_example["rouge-w"].append(combine_references(
            [rouge_w(tokenizer.tokenize(reference), tokens) for reference in references], strategy))
    scores = {name: 100 * mean(values) for name, values in per_example.items()}
    details = package_details("rouge-score", use_stemmer=options["rouge_use_stemmer"],
                              multiref_strategy=strategy, aggregate="mean of per-example F-measures",
                              rouge_w=f"rouge-metric {version('rouge-metric')}, weight {WEIGHT}, on rouge-score's "
                                      f"tokens")
    return MetricResult(scores, details)
