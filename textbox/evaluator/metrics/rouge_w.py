"""ROUGE-W-1.2 (Lin 2004: weighted longest common subsequence, rewarding consecutive matches) from rouge-metric.

rouge-score, which computes our other ROUGE figures, has no ROUGE-W; rouge-metric's Python ROUGE does it as
ROUGE-1.5.5 does (its -w 1.2, which TextBox 2.0's files2rouge passed), here on rouge-score's own tokens (same
lowercasing, same stemming). tests/unit/evaluator/metrics/test_rouge.py checks it against py-rouge.
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rouge_metric import PyRouge

WEIGHT = 1.2


@lru_cache(maxsize=1)
def _scorer() -> PyRouge:
    from rouge_metric import PyRouge

    return PyRouge(rouge_n=False, rouge_l=False, rouge_w=True, rouge_w_weight=WEIGHT, rouge_s=False, rouge_su=False)


def rouge_w(reference: list[str], hypothesis: list[str]) -> float:
    """ROUGE-W F-measure of one tokenised hypothesis against one tokenised reference."""
    if not reference or not hypothesis:
        return 0.0
    scores = _scorer().evaluate_tokenized([[hypothesis]], [[[reference]]])
    return scores[f"rouge-w-{WEIGHT}"]["f"]
