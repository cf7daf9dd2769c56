"""METEOR (Banerjee & Lavie 2005) by the implementation ``meteor_type`` names.

- nltk: NLTK's reimplementation, the mean of its sentence scores on whitespace tokens; it needs NLTK's WordNet
  corpus for synonym matching.
- pycocoevalcap: METEOR 1.5 itself (Denkowski & Lavie 2014; the Java jar and English paraphrase table that
  pycocoevalcap ships, run as coco-caption runs it: -l en -norm), on TextBox 2.0's NLTK word tokens, as TextBox
  2.0, coco-caption and the E2E and WebNLG challenges scored METEOR. ``corpus_meteor`` chooses its corpus score
  (METEOR's own aggregate of every example's statistics) or the mean of its sentence scores.
"""
from __future__ import annotations

import importlib.util
import shutil
from functools import lru_cache
from statistics import mean
from typing import TYPE_CHECKING

from textbox.config.errors import TextBoxUserError
from textbox.evaluator.metrics.base import MetricInputs, MetricOptions, MetricResult, package_details
from textbox.evaluator.metrics.tokens import textbox_words

if TYPE_CHECKING:
    from pycocoevalcap.meteor.meteor import Meteor

MISSING_WORDNET = (
    "metric 'meteor' needs NLTK's WordNet corpus, which is not installed (NLTK looks in: {paths}). "
    "On a machine with internet run: python -m nltk.downloader -d <dir> wordnet, copy <dir> here and set "
    "NLTK_DATA=<dir>; or remove 'meteor' from metrics."
)


def missing_resources(options: MetricOptions) -> str | None:
    """What meteor_type needs and lacks here (WordNet; pycocoevalcap and Java), or None."""
    if options["meteor_type"] == "nltk":
        return missing_wordnet()
    if importlib.util.find_spec("pycocoevalcap") is None:
        return ("meteor_type='pycocoevalcap' needs pycocoevalcap, which is not installed: pip install pycocoevalcap "
                "(or pip install -e '.[coco]')")
    if shutil.which("java") is None:
        return ("meteor_type='pycocoevalcap' runs METEOR 1.5, a Java program: install a Java runtime (e.g. OpenJDK "
                "17), or give --meteor_type=nltk (which needs NLTK's WordNet data)")
    return None


def missing_wordnet() -> str | None:
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


def meteor(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """METEOR as meteor_type computes it, 0-100."""
    if options["meteor_type"] == "pycocoevalcap":
        return _meteor_1_5(inputs, options)
    return _nltk(inputs)


@lru_cache(maxsize=1)
def meteor_1_5() -> Meteor:
    """pycocoevalcap's METEOR 1.5 scorer: one Java process for the life of this one, since it takes seconds to load
    its paraphrase table (every validation reuses it; the wrapper serialises calls with a lock)."""
    from pycocoevalcap.meteor.meteor import Meteor

    return Meteor()


def _meteor_1_5(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """METEOR 1.5 through pycocoevalcap's wrapper (one Java process for the corpus)."""
    references = {index: [" ".join(textbox_words(text)) for text in refs]
                  for index, refs in enumerate(inputs.references)}
    hypotheses = {index: [" ".join(textbox_words(text))] for index, text in enumerate(inputs.hypotheses)}
    corpus, sentences = meteor_1_5().compute_score(references, hypotheses)
    score = corpus if options["corpus_meteor"] else mean(sentences)
    return MetricResult({"meteor": 100 * score}, package_details(
        "pycocoevalcap", meteor_type="pycocoevalcap", computes="METEOR 1.5 (-l en -norm)",
        tokenize="TextBox 2.0's NLTK word tokens",
        aggregate="METEOR's corpus score" if options["corpus_meteor"] else "mean of sentence scores"))


def _nltk(inputs: MetricInputs) -> MetricResult:
    """Mean sentence METEOR on whitespace tokens; NLTK scores every reference and keeps the best."""
    from nltk.translate.meteor_score import meteor_score

    wordnet = load_wordnet()
    scores = [meteor_score([reference.split() for reference in references], hypothesis.split(), wordnet=wordnet)
              for hypothesis, references in zip(inputs.hypotheses, inputs.references)]
    return MetricResult({"meteor": 100 * mean(scores)}, package_details("nltk", meteor_type="nltk",
                                                                        tokenize="whitespace"))
