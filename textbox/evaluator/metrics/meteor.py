"""METEOR (Banerjee & Lavie 2005) from NLTK, which needs the WordNet corpus for synonym matching."""
from __future__ import annotations

from statistics import mean
from typing import Any, Mapping

from textbox.config.errors import TextBoxUserError
from textbox.evaluator.metrics.base import MetricInputs, MetricResult, package_details

MISSING_WORDNET = (
    "metric 'meteor' needs NLTK's WordNet corpus, which is not installed (NLTK looks in: {paths}). "
    "On a machine with internet run: python -m nltk.downloader -d <dir> wordnet, copy <dir> here and set "
    "NLTK_DATA=<dir>; or remove 'meteor' from metrics."
)


def missing_wordnet(options: Mapping[str, Any] | None = None) -> str | None:
    """Why METEOR cannot run here (WordNet is not where NLTK looks), or None; cheap: it finds, not loads."""
    import nltk

    for resource in ("corpora/wordnet", "corpora/wordnet.zip"):
        try:
            nltk.data.find(resource)
            return None
        except LookupError:
            continue
    return MISSING_WORDNET.format(paths=", ".join(map(str, nltk.data.path)))


def load_wordnet():
    """The WordNet reader, or a TextBoxUserError saying how to install it (NLTK would offer a download)."""
    import nltk
    from nltk.corpus import wordnet

    try:
        wordnet.ensure_loaded()
    except LookupError:
        raise TextBoxUserError(MISSING_WORDNET.format(paths=", ".join(map(str, nltk.data.path)))) from None
    return wordnet


def meteor(inputs: MetricInputs, options: Mapping[str, Any]) -> MetricResult:
    """Mean sentence METEOR on whitespace tokens; NLTK scores every reference and keeps the best."""
    from nltk.translate.meteor_score import meteor_score

    wordnet = load_wordnet()
    scores = [meteor_score([reference.split() for reference in references], hypothesis.split(), wordnet=wordnet)
              for hypothesis, references in zip(inputs.hypotheses, inputs.references)]
    return MetricResult({"meteor": 100 * mean(scores)}, package_details("nltk", tokenize="whitespace"))
