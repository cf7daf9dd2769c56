"""An example --user_dir package: one metric of your own, registered for --metrics.

    python run_textbox.py --user_dir=examples/user_metric --metrics="['bleu','keyword_coverage']"

keyword_coverage: the percentage of the source's words (the keywords of a CommonGen-like task) that the output
uses, over the whole test split. It needs the sources (needs_sources=True), and higher is better, so it may also
choose the best checkpoint (--metrics_for_best_model="['keyword_coverage']").
"""
from __future__ import annotations

from typing import Mapping

import textbox


def keyword_coverage(inputs: textbox.MetricInputs, options: Mapping[str, object]) -> dict[str, float]:
    """Source words found among the output's words, over every example, in percent. ``inputs`` is already
    lower-cased when --lower_evaluation=True (the default); ``options`` holds every config key."""
    assert inputs.sources is not None  # needs_sources=True: the framework hands them over
    found = total = 0
    for source, output in zip(inputs.sources, inputs.hypotheses):
        keywords = source.split()
        words = set(output.replace(".", " ").split())
        found += sum(word in words for word in keywords)
        total += len(keywords)
    return {"keyword_coverage": 100.0 * found / total if total else 0.0}


textbox.register_metric("keyword_coverage", keyword_coverage, goal="max", needs_sources=True, bounds=(0.0, 100.0),
                        summary="percent of the source's words the output uses (examples/user_metric)")
