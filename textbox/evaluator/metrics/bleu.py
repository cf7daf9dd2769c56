"""BLEU by the implementation ``bleu_type`` names: sacrebleu's (the default, the field's standard on detokenised
text), or one of those TextBox 2.0's datasets were scored with, so that its tables can be reproduced:

- nltk: NLTK's corpus_bleu (``corpus_bleu=True``) or the mean of its sentence_bleu, with SmoothingFunction's method
  ``smoothing_function``, on TextBox 2.0's NLTK word tokens (story generation, dialogue);
- pycocoevalcap: the MS-COCO caption evaluation's BLEU on those tokens (CommonGen, question generation);
- mt-eval: mteval-v13a's BLEU, case-insensitive, on its own tokens (WebNLG, WikiBio; mteval.py);
- multi-bleu: Moses' multi-bleu.perl on those NLTK tokens (style transfer, paraphrase): corpus BLEU without
  smoothing, which sacrebleu computes exactly with its whitespace tokenizer and smoothing off.

Every type reports ``bleu`` (BLEU up to bleu_max_ngrams) and the cumulative ``bleu-1``..``bleu-N``.
"""
from __future__ import annotations

import importlib.util
import warnings
from statistics import mean
from typing import Callable, Literal

from textbox.evaluator.metrics import mteval, sacrebleu_metrics
from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, ngram_orders, package_details
from textbox.evaluator.metrics.tokens import textbox_words

# options only bleu_type='nltk' reads: their defaults
NLTK_ONLY: dict[Literal["corpus_bleu", "smoothing_function"], object] = {"corpus_bleu": False, "smoothing_function": 0}
SMOOTHING_METHODS = range(8)  # NLTK's SmoothingFunction.method0 .. method7
_TEXTBOX_TOKENS = "TextBox 2.0's NLTK word tokens"


def bleu(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """``bleu`` and ``bleu-1``..``bleu-N`` as bleu_type computes them."""
    return _TYPES[options["bleu_type"]](inputs, options)


def missing_resources(options: MetricOptions) -> str | None:
    """What bleu_type needs and lacks here (pycocoevalcap's package), or None."""
    if options["bleu_type"] == "pycocoevalcap" and importlib.util.find_spec("pycocoevalcap") is None:
        return ("bleu_type='pycocoevalcap' needs pycocoevalcap, which is not installed: pip install pycocoevalcap "
                "(or pip install -e '.[coco]')")
    return None


def option_problems(options: MetricOptions, where: Callable[[str], str]) -> list[str]:
    """Options that do not fit bleu_type (checked before anything runs, when bleu is computed)."""
    kind, problems = options["bleu_type"], []
    if kind != "sacrebleu" and options["bleu_tokenize"] != "13a":
        problems.append(f"{where('bleu_tokenize')}={options['bleu_tokenize']!r} is sacrebleu's tokenizer, but "
                        f"bleu_type={kind!r} tokenises as TextBox 2.0 did: drop one of them")
    if kind != "nltk":
        problems += [f"{where(key)}={options[key]!r} is read by bleu_type='nltk' only (now {kind!r}): drop it"
                     for key, default in NLTK_ONLY.items() if options[key] != default]
    elif options["smoothing_function"] not in SMOOTHING_METHODS:
        problems.append(f"{where('smoothing_function')} must be 0-7 (NLTK's SmoothingFunction.method0-7), got "
                        f"{options['smoothing_function']}")
    return problems


def _orders(options: MetricOptions) -> list[list[float]]:
    """Uniform weights of the cumulative BLEU-n, n = 1..bleu_max_ngrams."""
    return [[1 / n] * n for n in range(1, options["bleu_max_ngrams"] + 1)]


def _figures(cumulative: list[float]) -> dict[str, float]:
    return {"bleu": cumulative[-1], **dict(zip(ngram_orders("bleu", len(cumulative)), cumulative))}


def _nltk(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu

    hypotheses = [textbox_words(text) for text in inputs.hypotheses]
    references = [[textbox_words(text) for text in refs] for refs in inputs.references]
    smoothing = getattr(SmoothingFunction(), f"method{options['smoothing_function']}")
    with warnings.catch_warnings():  # NLTK warns of every order without a match; the figure says it
        warnings.simplefilter("ignore")
        if options["corpus_bleu"]:
            cumulative = [100 * corpus_bleu(references, hypotheses, weights, smoothing)
                          for weights in _orders(options)]
        else:
            cumulative = [100 * mean(sentence_bleu(refs, words, weights, smoothing)
                                     for words, refs in zip(hypotheses, references)) for weights in _orders(options)]
    return MetricResult(_figures(cumulative), package_details(
        "nltk", bleu_type="nltk", tokenize=_TEXTBOX_TOKENS, smoothing=f"method{options['smoothing_function']}",
        aggregate="corpus_bleu" if options["corpus_bleu"] else "mean of sentence_bleu"))


def _pycocoevalcap(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    from pycocoevalcap.bleu.bleu import Bleu

    references = {index: [" ".join(textbox_words(text)) for text in refs]
                  for index, refs in enumerate(inputs.references)}
    hypotheses = {index: [" ".join(textbox_words(text))] for index, text in enumerate(inputs.hypotheses)}
    scores, _ = Bleu(options["bleu_max_ngrams"]).compute_score(references, hypotheses, verbose=0)
    return MetricResult(_figures([100 * score for score in scores]), package_details(
        "pycocoevalcap", bleu_type="pycocoevalcap", tokenize=_TEXTBOX_TOKENS, reference_length="closest"))


def _multi_bleu(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    from sacrebleu.metrics import BLEU

    order = options["bleu_max_ngrams"]
    metric = BLEU(tokenize="none", smooth_method="none", max_ngram_order=order, force=True)
    hypotheses = [" ".join(textbox_words(text)) for text in inputs.hypotheses]
    references = [[" ".join(textbox_words(text)) for text in refs] for refs in inputs.references]
    corpus = metric.corpus_score(hypotheses, sacrebleu_metrics.reference_streams(references))
    cumulative = [BLEU.compute_bleu(corpus.counts[:n], corpus.totals[:n], corpus.sys_len, corpus.ref_len,
                                    smooth_method="none", max_ngram_order=n).score for n in range(1, order + 1)]
    return MetricResult(_figures(cumulative), package_details(
        "sacrebleu", bleu_type="multi-bleu", computes="Moses' multi-bleu.perl (no -lc: case as given)",
        tokenize=_TEXTBOX_TOKENS, signature=metric.get_signature().format()))


_TYPES = {"sacrebleu": sacrebleu_metrics.bleu, "nltk": _nltk, "pycocoevalcap": _pycocoevalcap,
          "mt-eval": mteval.bleu, "multi-bleu": _multi_bleu}
