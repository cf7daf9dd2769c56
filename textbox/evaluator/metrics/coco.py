"""CIDEr-D and SPICE from pycocoevalcap (the MS-COCO caption evaluation code), as TextBox 2.0 computed them.

pycocoevalcap's CIDEr scorer is pure Python on tokenised text; its PTB tokenizer (Java) is not used: texts are
lower-cased by lower_evaluation as every metric, and split on whitespace. CIDEr is reported x10, TextBox 2.0's and
the CommonGen leaderboard's scale. SPICE runs a Java program that needs Stanford CoreNLP 3.6.0's jars, which
pycocoevalcap downloads on first use: without them (offline) it is refused before anything runs.
"""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any, Mapping

from textbox.evaluator.metrics.base import MetricInputs, MetricResult, package_details

_INSTALL = "pip install pycocoevalcap (or pip install -e '.[coco]')"
_CORENLP = "stanford-corenlp-3.6.0.jar"


def missing_pycocoevalcap() -> str | None:
    """Why cider cannot run here, or None."""
    if importlib.util.find_spec("pycocoevalcap") is None:
        return f"metric 'cider' needs pycocoevalcap, which is not installed: {_INSTALL}"
    return None


def missing_spice() -> str | None:
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


def _corpus(inputs: MetricInputs) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    references = {index: [" ".join(text.split()) for text in refs] for index, refs in enumerate(inputs.references)}
    hypotheses = {index: [" ".join(text.split())] for index, text in enumerate(inputs.hypotheses)}
    return references, hypotheses


def cider(inputs: MetricInputs, options: Mapping[str, Any]) -> MetricResult:
    """CIDEr-D (Vedantam et al. 2015; pycocoevalcap's Cider: n = 1..4, sigma 6, document frequencies from the
    references of this corpus), x10."""
    from pycocoevalcap.cider.cider import Cider

    score, _ = Cider().compute_score(*_corpus(inputs))
    return MetricResult({"cider": 10 * float(score)},
                        package_details("pycocoevalcap", tokenize="whitespace", scale="x10 (TextBox 2.0)"))


def spice(inputs: MetricInputs, options: Mapping[str, Any]) -> MetricResult:
    """SPICE (Anderson et al. 2016) F-score, in percent."""
    from pycocoevalcap.spice.spice import Spice

    score, _ = Spice().compute_score(*_corpus(inputs))
    return MetricResult({"spice": 100 * float(score)}, package_details("pycocoevalcap", tokenize="whitespace"))
