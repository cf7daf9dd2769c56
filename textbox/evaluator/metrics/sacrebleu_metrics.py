"""Corpus BLEU, chrF, chrF+, chrF++ and TER exactly as sacrebleu computes them, multi-reference natively."""
from __future__ import annotations

from typing import Any, Mapping

from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, ngram_orders, package_details


CHRF_WORD_ORDERS = {"chrf": 0, "chrf+": 1, "chrf++": 2}  # word n-grams added to the character n-grams


def reference_streams(references: list[list[str]]) -> list[list[str | None]]:
    """sacrebleu takes one stream per reference position; None pads examples that have fewer references."""
    width = max(len(refs) for refs in references)
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]


def scorer(figure: str, options: Mapping[str, Any], sentence_level: bool = False) -> Any:
    """The sacrebleu metric that computes ``figure`` (bleu, chrf, chrf++ or ter) under ``options``.

    One place builds them so that the figures here and the analysis's per-example statistics
    (textbox.analysis.example_stats) cannot drift apart. ``sentence_level`` gives BLEU sacrebleu's
    sentence_bleu settings (effective n-gram order); the other metrics score sentences unchanged.
    """
    from sacrebleu.metrics import BLEU, CHRF, TER

    if figure == "bleu":
        return BLEU(lowercase=options["lower_evaluation"], tokenize=options["bleu_tokenize"],
                    max_ngram_order=options["bleu_max_ngrams"], effective_order=sentence_level)
    if figure in CHRF_WORD_ORDERS:
        return CHRF(word_order=CHRF_WORD_ORDERS[figure], lowercase=options["lower_evaluation"])
    if figure == "ter":
        return TER()
    raise KeyError(f"no sacrebleu metric computes {figure!r}")


def bleu(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """``bleu`` with sacrebleu's signature, and ``bleu-n``: the cumulative BLEU up to each order n."""
    from sacrebleu.metrics import BLEU

    max_order = options["bleu_max_ngrams"]
    metric = scorer("bleu", options)
    corpus = metric.corpus_score(inputs.hypotheses, reference_streams(inputs.references))
    scores = {"bleu": corpus.score}
    for order, name in enumerate(ngram_orders("bleu", max_order), start=1):
        # Clipped counts of order n do not depend on the other orders, so BLEU-n reuses the corpus statistics.
        scores[name] = BLEU.compute_bleu(corpus.counts[:order], corpus.totals[:order], corpus.sys_len,
                                         corpus.ref_len, smooth_method=metric.smooth_method,
                                         smooth_value=metric.smooth_value, max_ngram_order=order).score
    details = package_details("sacrebleu", bleu_type="sacrebleu", signature=metric.get_signature().format(),
                              max_ngram_order=max_order,
                              brevity_penalty=corpus.bp, hyp_len=corpus.sys_len, ref_len=corpus.ref_len)
    return MetricResult(scores, details)


def chrf(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """Character n-gram F-score (Popović 2015), sacrebleu's defaults."""
    return _chrf(inputs, options, "chrf")


def chrf_plus_plus(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """chrF with word unigrams and bigrams added (Popović 2017)."""
    return _chrf(inputs, options, "chrf++")


def chrf_plus(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """chrF with word unigrams added (TextBox 2.0's chrf+)."""
    return _chrf(inputs, options, "chrf+")


def _chrf(inputs: MetricInputs, options: MetricOptions, name: str) -> MetricResult:
    metric = scorer(name, options)
    corpus = metric.corpus_score(inputs.hypotheses, reference_streams(inputs.references))
    return MetricResult({name: corpus.score}, package_details("sacrebleu", signature=metric.get_signature().format()))


def ter(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """Translation edit rate, sacrebleu's defaults (case-insensitive, as its signature says); lower is better."""
    metric = scorer("ter", options)
    corpus = metric.corpus_score(inputs.hypotheses, reference_streams(inputs.references))
    return MetricResult({"ter": corpus.score}, package_details("sacrebleu", signature=metric.get_signature().format()))
