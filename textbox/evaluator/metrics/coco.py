"""CIDEr-D and SPICE from pycocoevalcap (the MS-COCO caption evaluation code), on the words their reference uses.

coco-caption (and CommonGen's official evaluation) tokenises every text with Stanford's PTBTokenizer, lower-cased,
punctuation dropped, before scoring; TextBox 2.0 gave them NLTK's word tokens instead (``coco_tokenize`` chooses;
textbox/evaluator/metrics/tokens.py). CIDEr is reported x10, TextBox 2.0's and the CommonGen leaderboard's scale.
SPICE runs a Java program that needs Stanford CoreNLP 3.6.0's jars, which pycocoevalcap downloads on first use:
without them (offline) it is refused before anything runs.
"""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from textbox.evaluator.metrics.base import Details, MetricInputs, MetricOptions, MetricResult, package_details
from textbox.evaluator.metrics.tokens import missing_ptb, ptb_words, textbox_words

_INSTALL = "pip install pycocoevalcap (or pip install -e '.[coco]')"
_CORENLP = "stanford-corenlp-3.6.0.jar"
TOKENIZE = {"ptb": "coco-caption's: Stanford PTBTokenizer, lower-cased, punctuation dropped",
            "nltk": "TextBox 2.0's: NLTK word tokens, punctuation kept"}


def missing_pycocoevalcap(options: MetricOptions) -> str | None:
    """Why cider cannot run here (the package; Java for coco-caption's tokenizer), or None."""
    if importlib.util.find_spec("pycocoevalcap") is None:
        return f"metric 'cider' needs pycocoevalcap, which is not installed: {_INSTALL}"
    if options["coco_tokenize"] == "ptb" and (missing := missing_ptb()):
        return f"metric 'cider' with coco_tokenize='ptb': {missing}; or give --coco_tokenize=nltk (TextBox 2.0's)"
    return None


def missing_spice(options: MetricOptions) -> str | None:
    """Why SPICE cannot run here (package, Java, CoreNLP jars), or None."""
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None:
        return f"metric 'spice' needs pycocoevalcap, which is not installed: {_INSTALL}; and a Java runtime"
    if shutil.which("java") is None:
        return "metric 'spice' runs Java (pycocoevalcap's SPICE 1.0 jar): install a Java runtime (e.g. OpenJDK 17)"
    lib = Path(list(spec.submodule_search_locations)[0]) / "spice" / "lib"  # a namespace package: no origin
    if not (lib / _CORENLP).is_file():
        return (f"metric 'spice' needs Stanford CoreNLP 3.6.0's jars in {lib}, which pycocoevalcap downloads on "
                f"first use (not possible offline): on a machine with internet run python -c 'from pycocoevalcap."
                f"spice.get_stanford_models import get_stanford_models; get_stanford_models()' and copy {lib} here; "
                f"or remove 'spice' (CommonGen's other figure is cider)")
    return None


def _words(texts: list[str], tokenize: str) -> list[str]:
    if tokenize == "ptb":
        return [" ".join(words) for words in ptb_words(texts)]
    return [" ".join(textbox_words(text)) for text in texts]


def _corpus(inputs: MetricInputs, tokenize: str) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    """pycocoevalcap's input: {example: [tokenised references]}, {example: [tokenised output]}."""
    flat = [text for refs in inputs.references for text in refs]
    words = iter(_words(flat + list(inputs.hypotheses), tokenize))  # one tokenizer call (one Java start)
    references = {index: [next(words) for _ in refs] for index, refs in enumerate(inputs.references)}
    hypotheses = {index: [next(words)] for index in range(len(inputs.hypotheses))}
    return references, hypotheses


def _details(options: MetricOptions, **settings: object) -> Details:
    tokenize = options["coco_tokenize"]
    return package_details("pycocoevalcap", tokenize=f"{tokenize} ({TOKENIZE[tokenize]})", **settings)


def cider(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """CIDEr-D (Vedantam et al. 2015; pycocoevalcap's Cider: n = 1..4, sigma 6, document frequencies from the
    references of this corpus), x10."""
    from pycocoevalcap.cider.cider import Cider

    score, _ = Cider().compute_score(*_corpus(inputs, options["coco_tokenize"]))
    return MetricResult({"cider": 10 * float(score)}, _details(options, scale="x10 (TextBox 2.0)"))


def spice(inputs: MetricInputs, options: MetricOptions) -> MetricResult:
    """SPICE (Anderson et al. 2016) F-score, in percent."""
    from pycocoevalcap.spice.spice import Spice

    score, _ = Spice().compute_score(*_corpus(inputs, options["coco_tokenize"]))
    return MetricResult({"spice": 100 * float(score)}, _details(options))
