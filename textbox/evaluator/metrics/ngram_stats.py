"""N-gram statistics on whitespace tokens: diversity (distinct-n, unique-n) and novelty against the source."""
from __future__ import annotations

from collections import Counter
from typing import Iterator

from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, ngram_orders, textbox_details


def ngrams(text: str, order: int) -> Iterator[tuple[str, ...]]:
    tokens = text.split()
    return (tuple(tokens[i:i + order]) for i in range(len(tokens) - order + 1))


def _percent(part: int, whole: int) -> float:
    """Share in percent; 0 when there is no n-gram of that order at all (every text shorter than n)."""
    return 100 * part / whole if whole else 0.0


def distinct(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """distinct-n (Li et al. 2016): distinct n-grams over all n-grams of the whole corpus, in percent."""
    scores = {}
    for order, name in enumerate(ngram_orders("distinct", options["distinct_max_ngrams"]), start=1):
        counts = Counter(gram for text in inputs.hypotheses for gram in ngrams(text, order))
        scores[name] = _percent(len(counts), sum(counts.values()))
    return MetricResult(scores, textbox_details(tokenize="whitespace", level="corpus"))


def unique(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """unique-n: how many distinct n-grams the corpus uses (the numerator of distinct-n)."""
    scores = {}
    for order, name in enumerate(ngram_orders("unique", options["distinct_max_ngrams"]), start=1):
        scores[name] = float(len({gram for text in inputs.hypotheses for gram in ngrams(text, order)}))
    return MetricResult(scores, textbox_details(tokenize="whitespace", level="corpus"))


def novelty(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """novelty-n (See et al. 2017): percent of hypothesis n-grams, counted with repeats, absent from the source.

    Low values mean the model copies its input (extractive summaries); hypotheses equal to sources give 0.
    """
    assert inputs.sources is not None, "the registry only calls novelty with sources"
    scores = {}
    for order, name in enumerate(ngram_orders("novelty", options["novelty_max_ngrams"]), start=1):
        novel = total = 0
        for hypothesis, source in zip(inputs.hypotheses, inputs.sources):
            source_grams = set(ngrams(source, order))
            hypothesis_grams = list(ngrams(hypothesis, order))
            novel += sum(gram not in source_grams for gram in hypothesis_grams)
            total += len(hypothesis_grams)
        scores[name] = _percent(novel, total)
    return MetricResult(scores, textbox_details(tokenize="whitespace", counted="n-gram occurrences"))
