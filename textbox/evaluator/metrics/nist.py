"""NIST (Doddington 2002) as mteval-v13a.pl computes it: information-weighted n-gram matches with a length penalty.

mteval-v13a is the reference (and TextBox 2.0's pymteval a port of it): mteval's tokenisation (sacrebleu's 13a
tokenizer is that code), case-insensitive as mteval is without -c, n = 1..5. Each n-gram's information,
log2(count(w1..wn-1) / count(w1..wn)), is counted over every reference of the corpus; an output's n-gram earns it
up to the most times one reference of its example holds it; each order's sum is divided by the output's n-gram
count (at least 1, so that outputs shorter than n words add nothing rather than fail), and the total is scaled by
exp(-beta * ln(ratio)^2) when the output words are fewer than the mean reference length (beta: 0.5 at a ratio of
2/3). With a different number of references per example, the reference length is each example's mean reference
length, summed (pymteval's rule; mteval needs every example to have them all).

NLTK's corpus_nist differs with several references (its information weights and reference lengths), and divides
by zero when no output reaches 5 words.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping

from textbox.evaluator.metrics.base import MetricInputs, MetricResult, textbox_details

ORDER = 5  # NIST's (mteval's) n
_BETA = -math.log(0.5) / math.log(1.5) ** 2


def mteval_words(text: str) -> list[str]:
    """mteval-v13a's tokens of ``text``, lower-cased."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()(text.lower()).split()


def ngram_counts(words: list[str]) -> Counter[tuple[str, ...]]:
    """Every n-gram of ``words`` for n = 1..ORDER, with its count."""
    return Counter(tuple(words[start:start + n]) for n in range(1, ORDER + 1) for start in range(len(words) - n + 1))


def length_penalty(ratio: float) -> float:
    """mteval's NIST length penalty of output length / mean reference length."""
    if ratio >= 1:
        return 1.0
    if ratio <= 0:
        return 0.0
    return math.exp(-_BETA * math.log(ratio) ** 2)


def nist(inputs: MetricInputs, options: Mapping[str, Any]) -> MetricResult:
    """Corpus NIST with n = 1..5 on mteval's tokens."""
    hypotheses = [mteval_words(text) for text in inputs.hypotheses]
    references = [[mteval_words(text) for text in refs] for refs in inputs.references]
    in_references: Counter[tuple[str, ...]] = Counter()
    for refs in references:
        for words in refs:
            in_references.update(ngram_counts(words))
    reference_words = sum(len(words) for refs in references for words in refs)

    def information(ngram: tuple[str, ...]) -> float:
        history = in_references[ngram[:-1]] if len(ngram) > 1 else reference_words
        return math.log2(history / in_references[ngram])

    earned = [0.0] * (ORDER + 1)
    counted = [0] * (ORDER + 1)
    mean_reference_length = 0.0
    for words, refs in zip(hypotheses, references):
        most: Counter[tuple[str, ...]] = Counter()
        for reference in refs:
            most |= ngram_counts(reference)  # per n-gram, the most any one reference holds
        for ngram, count in ngram_counts(words).items():
            if ngram in most:
                earned[len(ngram)] += information(ngram) * min(count, most[ngram])
        for n in range(1, ORDER + 1):
            counted[n] += max(len(words) - n + 1, 0)
        mean_reference_length += sum(len(reference) for reference in refs) / len(refs)
    ratio = counted[1] / mean_reference_length if mean_reference_length else 1.0
    score = sum(earned[n] / max(counted[n], 1) for n in range(1, ORDER + 1)) * length_penalty(ratio)
    details = textbox_details(reference="mteval-v13a NIST", tokenize="mteval-v13a (sacrebleu 13a)",
                              case="insensitive (mteval without -c)", n=ORDER,
                              output_words=counted[1], mean_reference_words=round(mean_reference_length, 2),
                              length_penalty=round(length_penalty(ratio), 6))
    if counted[ORDER] == 0:
        details["note"] = (f"no output has {ORDER} words: higher orders add 0" if counted[1] else
                           "every output is empty: NIST is 0")
    return MetricResult({"nist": score}, details)
