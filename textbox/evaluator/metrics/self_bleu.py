"""Self-BLEU (Zhu et al. 2018): each hypothesis scored by sacrebleu's sentence BLEU against all the others.

High values mean the outputs resemble each other (low diversity). Scoring N hypotheses against N-1
references each is quadratic if done naively; here every hypothesis's n-grams are counted once, and for each
n-gram the two largest counts (with their owners) give its clipping count against "all but me" directly.
The figure equals the mean of ``sacrebleu.sentence_bleu(h_i, [h_j for j != i])``.
"""
from __future__ import annotations

from collections import Counter
from statistics import mean

from textbox.config.errors import TextBoxUserError
from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, package_details


class _TopTwoCounts:
    """For every n-gram, the largest count in any hypothesis and the largest in any other hypothesis."""

    def __init__(self, counts: list[Counter]):
        self._best: dict[tuple[str, ...], tuple[int, int]] = {}  # n-gram -> (count, owner)
        self._second: Counter = Counter()
        for owner, grams in enumerate(counts):
            for gram, count in grams.items():
                best_count, best_owner = self._best.get(gram, (0, -1))
                if count > best_count:
                    self._best[gram] = (count, owner)
                    self._second[gram] = best_count
                elif count > self._second[gram]:
                    self._second[gram] = count

    def max_elsewhere(self, gram: tuple[str, ...], owner: int) -> int:
        count, best_owner = self._best[gram]
        return self._second[gram] if best_owner == owner else count


def _closest_other_length(length: int, length_counts: Counter) -> int:
    """sacrebleu's reference length: the closest to ``length`` (shorter on ties) among the other hypotheses."""
    others = [other for other, count in length_counts.items() if other != length or count > 1]
    return min(others, key=lambda other: (abs(other - length), other))


def self_bleu(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """Mean sentence BLEU (exp smoothing, effective order, as ``sacrebleu.sentence_bleu``) of each hypothesis."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.metrics.helpers import extract_all_word_ngrams

    if len(inputs.hypotheses) < 2:
        raise TextBoxUserError("metric 'self_bleu' compares hypotheses with each other: it needs at least 2")
    max_order = options["bleu_max_ngrams"]
    metric = BLEU(lowercase=options["lower_evaluation"], tokenize=options["bleu_tokenize"],
                  max_ngram_order=max_order, effective_order=True)
    texts = [text.lower() if metric.lowercase else text for text in inputs.hypotheses]
    extracted = [extract_all_word_ngrams(metric.tokenizer(text.rstrip()), 1, max_order) for text in texts]
    top_two = _TopTwoCounts([grams for grams, _ in extracted])
    length_counts = Counter(length for _, length in extracted)
    scores = []
    for owner, (grams, length) in enumerate(extracted):
        correct, total = [0] * max_order, [0] * max_order
        for gram, count in grams.items():
            total[len(gram) - 1] += count
            correct[len(gram) - 1] += min(count, top_two.max_elsewhere(gram, owner))
        reference_length = _closest_other_length(length, length_counts)
        scores.append(BLEU.compute_bleu(correct, total, length, reference_length, smooth_method=metric.smooth_method,
                                        effective_order=True, max_ngram_order=max_order).score)
    details = package_details("sacrebleu", tokenize=options["bleu_tokenize"], lowercase=metric.lowercase,
                              smooth_method=metric.smooth_method, effective_order=True, max_ngram_order=max_order,
                              level="mean sentence BLEU against all other hypotheses")
    return MetricResult({"self_bleu": mean(scores)}, details)
