"""NIST (Doddington 2002) and BLEU as mteval-v13a.pl computes them (TextBox 2.0's pymteval is a port of it).

Both read mteval's tokens (sacrebleu's 13a tokenizer is that code), case-insensitive as mteval is without -c, and
count n-grams per example against the most any one of its references holds.

NIST (n = 1..5): each n-gram's information, log2(count(w1..wn-1) / count(w1..wn)), is counted over every reference
of the corpus; an output's matched n-grams earn it; each order's sum is divided by the output's n-gram count (at
least 1, so that outputs shorter than n words add nothing rather than fail), and the total is scaled by
exp(-beta * ln(ratio)^2) when the output words are fewer than the mean reference length (beta: 0.5 at a ratio of
2/3). With a different number of references per example, the reference length is each example's mean reference
length, summed (pymteval's rule; mteval needs every example to have them all). NLTK's corpus_nist differs with
several references (its information weights and reference lengths), and divides by zero when no output reaches 5
words.

BLEU (TextBox 2.0's bleu_type 'mt-eval'): clipped n-gram precisions, the closest reference length (the shorter on a
tie), and mteval's smoothing of an order without any match (1 / (2^k * count), k counting such orders). pymteval
floors such a precision at 1e-15 instead, and counts a negative number of n-grams for outputs shorter than n words:
the two agree whenever every order has a match and every output has at least N words.
"""
from __future__ import annotations

import math
from collections import Counter

from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, ngram_orders, textbox_details

NIST_ORDER = 5  # NIST's (mteval's) n
_BETA = -math.log(0.5) / math.log(1.5) ** 2
_SETTINGS = {"reference": "mteval-v13a.pl", "tokenize": "mteval-v13a (sacrebleu 13a)",
             "case": "insensitive (mteval without -c)"}

NGrams = Counter[tuple[str, ...]]


def mteval_words(text: str) -> list[str]:
    """mteval-v13a's tokens of ``text``, lower-cased."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()(text.lower()).split()


def ngram_counts(words: list[str], order: int) -> NGrams:
    """Every n-gram of ``words`` for n = 1..order, with its count."""
    return Counter(tuple(words[start:start + n]) for n in range(1, order + 1) for start in range(len(words) - n + 1))


def _most(references: list[list[str]], order: int) -> NGrams:
    """Per n-gram, the most times any one reference holds it."""
    most: NGrams = Counter()
    for words in references:
        most |= ngram_counts(words, order)
    return most


def length_penalty(ratio: float) -> float:
    """mteval's NIST length penalty of output length / mean reference length."""
    if ratio >= 1:
        return 1.0
    if ratio <= 0:
        return 0.0
    return math.exp(-_BETA * math.log(ratio) ** 2)


def nist(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """Corpus NIST with n = 1..5 on mteval's tokens."""
    hypotheses = [mteval_words(text) for text in inputs.hypotheses]
    references = [[mteval_words(text) for text in refs] for refs in inputs.references]
    in_references: NGrams = Counter()
    for refs in references:
        for words in refs:
            in_references.update(ngram_counts(words, NIST_ORDER))
    reference_words = sum(len(words) for refs in references for words in refs)

    def information(ngram: tuple[str, ...]) -> float:
        history = in_references[ngram[:-1]] if len(ngram) > 1 else reference_words
        return math.log2(history / in_references[ngram])

    earned = [0.0] * (NIST_ORDER + 1)
    counted = [0] * (NIST_ORDER + 1)
    mean_reference_length = 0.0
    for words, refs in zip(hypotheses, references):
        most = _most(refs, NIST_ORDER)
        for ngram, count in ngram_counts(words, NIST_ORDER).items():
            if ngram in most:
                earned[len(ngram)] += information(ngram) * min(count, most[ngram])
        for n in range(1, NIST_ORDER + 1):
            counted[n] += max(len(words) - n + 1, 0)
        mean_reference_length += sum(len(reference) for reference in refs) / len(refs)
    ratio = counted[1] / mean_reference_length if mean_reference_length else 1.0
    score = sum(earned[n] / max(counted[n], 1) for n in range(1, NIST_ORDER + 1)) * length_penalty(ratio)
    details = textbox_details(**_SETTINGS, n=NIST_ORDER, output_words=counted[1],
                              mean_reference_words=round(mean_reference_length, 2),
                              length_penalty=round(length_penalty(ratio), 6))
    if counted[NIST_ORDER] == 0:
        details["note"] = (f"no output has {NIST_ORDER} words: higher orders add 0" if counted[1] else
                           "every output is empty: NIST is 0")
    return MetricResult({"nist": score}, details)


def closest_length(references: list[list[str]], length: int) -> int:
    """The reference length closest to ``length``, the shorter one on a tie (mteval's and multi-bleu's rule)."""
    return min((len(words) for words in references), key=lambda candidate: (abs(candidate - length), candidate))


def bleu(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """mteval-v13a's corpus BLEU up to bleu_max_ngrams (``bleu``) and the cumulative BLEU-1..N."""
    order = options["bleu_max_ngrams"]
    matches, counts = [0] * (order + 1), [0] * (order + 1)
    output_words = reference_words = 0
    for text, refs in zip(inputs.hypotheses, inputs.references):
        words, references = mteval_words(text), [mteval_words(reference) for reference in refs]
        most = _most(references, order)
        for ngram, count in ngram_counts(words, order).items():
            matches[len(ngram)] += min(count, most.get(ngram, 0))
        for n in range(1, order + 1):
            counts[n] += max(len(words) - n + 1, 0)
        output_words += len(words)
        reference_words += closest_length(references, len(words))
    brevity = math.exp(min(0.0, 1 - reference_words / output_words)) if output_words else 0.0
    cumulative, log_sum, smooth = [], 0.0, 1
    for n in range(1, order + 1):
        if counts[n] == 0:
            term = 0.0
        elif matches[n] == 0:
            smooth *= 2
            term = math.log(1 / (smooth * counts[n]))
        else:
            term = math.log(matches[n] / counts[n])
        log_sum += term
        cumulative.append(100 * math.exp(log_sum / n) * brevity)
    scores = {"bleu": cumulative[-1], **dict(zip(ngram_orders("bleu", order), cumulative))}
    return MetricResult(scores, textbox_details(**_SETTINGS, bleu_type="mt-eval", max_ngram_order=order,
                                                brevity_penalty=round(brevity, 6), hyp_len=output_words,
                                                ref_len=reference_words))
