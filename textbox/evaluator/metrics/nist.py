"""NIST (Doddington 2002): information-weighted n-gram precision with a brevity penalty, from NLTK."""
from __future__ import annotations

from typing import Any, Mapping

from textbox.evaluator.metrics.base import MetricInputs, MetricResult, package_details

ORDER = 5  # NIST's (and NLTK's) default n


def nist(inputs: MetricInputs, options: Mapping[str, Any]) -> MetricResult:
    """Corpus NIST with n = 1..5 on whitespace tokens (the information weights come from the references)."""
    from nltk.translate.nist_score import corpus_nist

    references = [[reference.split() for reference in refs] for refs in inputs.references]
    hypotheses = [hypothesis.split() for hypothesis in inputs.hypotheses]
    return MetricResult({"nist": float(corpus_nist(references, hypotheses, n=ORDER))},
                        package_details("nltk", tokenize="whitespace", n=ORDER))
