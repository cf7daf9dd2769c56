"""analysis.md, analysis.json and the plots, written into the analysis's own directory (never a run's)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from textbox.analysis.compute import Analysis, Detail, FigureComparison, SystemScore
from textbox.analysis.significance import TEST_NAMES, Significance
from textbox.analysis.plots import plot_buckets, plot_differences, plot_lengths
from textbox.config.errors import TextBoxUserError
from textbox.studies.common.tables import markdown_table
from textbox.utils.atomic import write_text_atomic

REPORT_NAME, JSON_NAME = "analysis.md", "analysis.json"
BUCKETS_PLOT, LENGTHS_PLOT, DIFFERENCES_PLOT = "analysis_buckets.png", "analysis_lengths.png", "analysis_bootstrap.png"
SIGNIFICANCE_LEVEL = 0.05
TEST_LABELS = {**TEST_NAMES, "welch": "Welch's t-test over seeds", "one-sample t": "one-sample t-test over seeds"}


def write_report(analysis: Analysis, directory: Path, examples: int) -> Path:
    """Write the plots, analysis.json and analysis.md (showing ``examples`` examples) into ``directory``, which
    is created; return the report's path."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise TextBoxUserError(f"cannot create the analysis directory {directory} ({error.strerror}); choose another "
                               f"--output_dir") from None
    detail = analysis.detail
    if detail is not None:
        if detail.buckets:
            plot_buckets(detail, directory / BUCKETS_PLOT)
        plot_lengths(detail, directory / LENGTHS_PLOT)
        if detail.differences:
            plot_differences(detail, analysis.samples["bs"], directory / DIFFERENCES_PLOT)
    write_text_atomic(directory / JSON_NAME, json.dumps(as_json(analysis), indent=2, ensure_ascii=False) + "\n")
    path = directory / REPORT_NAME
    write_text_atomic(path, render(analysis, examples))
    return path


def as_json(analysis: Analysis) -> dict[str, Any]:
    """Every system x figure: score, interval, and each test against the baseline with its p, samples and seed."""
    return {
        "baseline": analysis.systems[0].name,
        "systems": [{"name": system.name, "kind": system.kind, "path": str(system.path), "seeds": system.seeds}
                    for system in analysis.systems],
        "test_set": {"examples": len(analysis.test_set.references), "references": analysis.test_set.origin},
        "seed": analysis.seed,
        "samples": analysis.samples,
        "results": [{"system": score.system, "figure": comparison.figure, "score": score.score,
                     "interval": None if score.interval is None else list(score.interval),
                     "interval_method": score.interval_method, "seed_scores": score.seed_scores,
                     "tests": [{"test": test.test, "p_value": test.p_value, "samples": test.samples,
                                "seed": test.seed, "implementation": test.implementation} for test in score.tests]}
                    for comparison in analysis.figures for score in comparison.scores],
        "methods": {comparison.figure: comparison.method for comparison in analysis.figures},
    }


def summary(analysis: Analysis) -> str:
    """One line per system and figure, for the terminal."""
    lines = []
    for comparison in analysis.figures:
        for position, score in enumerate(comparison.scores):
            role = "baseline" if position == 0 else "vs baseline: " + ", ".join(map(_p_text, score.tests))
            lines.append(f"{comparison.figure} {score.system}: {score.score:.2f} {_interval_text(score)}; {role}")
    return "\n".join(lines)


def _interval_text(score: SystemScore) -> str:
    return "(no interval: one seed)" if score.interval is None else \
        f"(95% CI {score.interval[0]:.2f}-{score.interval[1]:.2f})"


def _p_text(test: Significance) -> str:
    if test.p_value is None:
        return f"{test.test}: no test ({test.implementation})"
    return f"{test.test} p = {test.p_value:.4f}"


def render(analysis: Analysis, examples: int) -> str:
    sections = [_header(analysis), *(_figure_section(analysis, comparison) for comparison in analysis.figures)]
    detail = analysis.detail
    if detail is not None:
        if detail.differences:
            sections.append(f"## Bootstrap differences ({detail.figure})\n\nEach system's {detail.figure} minus "
                            f"{detail.labels[0]}'s over the same {analysis.samples['bs']} resamples."
                            f"\n\n![bootstrap differences]({DIFFERENCES_PLOT})")
        if detail.buckets:
            sections.append(_by_length(detail))
        sections.append(_lengths(detail))
        if examples:
            sections.append(_examples(detail, analysis, examples))
    return "\n\n".join(sections) + "\n"


def _header(analysis: Analysis) -> str:
    systems = analysis.systems
    title = (f"# {len(systems) - 1} system{'s' if len(systems) > 2 else ''} against the baseline {systems[0].name}"
             if len(systems) > 1 else f"# {systems[0].name} alone")
    lines = [title, ""]
    for position, system in enumerate(systems):
        seeds = f", seeds {', '.join(map(str, system.seeds))}" if system.seeds else ""
        lines.append(f"- {system.name}{' (baseline)' if position == 0 else ''}: {system.kind} `{system.path}`{seeds}")
    lines.append(f"- test set: {len(analysis.test_set.references)} examples, references from "
                 f"{analysis.test_set.origin}")
    tests = "; ".join(f"{TEST_NAMES[test]}, {analysis.samples[test]} {'resamples' if test == 'bs' else 'trials'}"
                      for test in analysis.tests)
    lines.append(f"- paired tests (two-sided): {tests}; seed {analysis.seed}")
    lines.append(f"- 95% intervals: bootstrap percentiles over {analysis.samples['bs']} resamples (same seed); "
                 f"a seed study's: t-interval over its seeds, cut to the figure's range")
    if any(system.seeds for system in systems):
        lines.append("- a seed study against a seed study: Welch's t-test on the per-seed figures; against a single "
                     "system: one-sample t-test of the seeds' figures against its figure (both two-sided)")
    if analysis.option_differences:
        lines.append(f"- metric options other than a run's own ({'; '.join(analysis.option_differences)}): every "
                     f"system is scored with the same options")
    return "\n".join(lines)


def _figure_section(analysis: Analysis, comparison: FigureComparison) -> str:
    seed_tests = sorted({test.test for score in comparison.scores for test in score.tests
                         if test.test not in analysis.tests}, key=list(TEST_LABELS).index)
    columns = [*analysis.tests, *seed_tests]
    header = ["system", comparison.figure, "95% interval", *(f"p ({TEST_LABELS[name]})" for name in columns)]
    rows = []
    for position, score in enumerate(comparison.scores):
        by_test = {test.test: test for test in score.tests}
        cells = ["baseline" if position == 0 else _p_cell(by_test.get(name)) for name in columns]
        interval = "-" if score.interval is None else f"[{score.interval[0]:.2f}, {score.interval[1]:.2f}]"
        rows.append([score.system, f"{score.score:.2f}", interval, *cells])
    better = "higher" if comparison.higher_is_better else "lower"
    return (f"## {comparison.figure} ({better} is better)\n\n{comparison.method}. p: two-sided, against the baseline; "
            f"p < {SIGNIFICANCE_LEVEL} marked *.\n\n{markdown_table(header, rows)}")


def _p_cell(test: Significance | None) -> str:
    if test is None:
        return "-"
    if test.p_value is None:
        return f"n/a ({test.implementation})"
    return f"{test.p_value:.4f}{'*' if test.p_value < SIGNIFICANCE_LEVEL else ''}"


def _by_length(detail: Detail) -> str:
    header = ["source words", "examples", *(f"{detail.figure} {label}" for label in detail.labels),
              *(f"words {label}" for label in detail.labels), "words ref"]
    rows = [[bucket.label, bucket.size, *bucket.scores, *bucket.hypothesis_words,
             bucket.reference_words] for bucket in detail.buckets]
    return (f"## By source length ({detail.figure})\n\nQuantile buckets of the source length in words; words: mean "
            f"output and reference lengths.\n\n{markdown_table(header, rows)}\n\n![by source length]({BUCKETS_PLOT})")


def _lengths(detail: Detail) -> str:
    named = [("references", detail.reference_words), *zip(detail.labels, detail.hypothesis_words)]
    mean_reference = detail.reference_words.mean()
    rows = [[name, words.mean(), words.mean() / mean_reference if mean_reference else float("nan"),
             np.median(words), words.min(), words.max(), int(np.count_nonzero(words == 0))] for name, words in named]
    header = ["text", "mean", "ratio to ref", "median", "min", "max", "empty"]
    return ("## Lengths in words\n\nAn example's reference length is the mean over its references.\n\n"
            f"{markdown_table(header, rows)}\n\n![lengths]({LENGTHS_PLOT})")


def _examples(detail: Detail, analysis: Analysis, count: int) -> str:
    several = len(detail.labels) > 1
    title = "Examples where the systems differ most" if several else "Examples the system does worst on"
    blocks = [f"## {title}\n\nBy each example's own {detail.figure} ({detail.statistics[0].method}); line numbers are "
              "those of the test files and the outputs."]
    notable = detail.notable_examples(count)
    if not notable:
        blocks.append("None: every example has the same score in every system.")
    sources = analysis.test_set.sources
    for index in notable:
        scores = ", ".join(f"{label} {statistics.sentence_scores[index]:.2f}"
                           for label, statistics in zip(detail.labels, detail.statistics))
        lines = [f"### Line {index + 1}: {detail.figure} {scores}", ""]
        if sources is not None:
            lines.append(f"- source: {sources[index]}")
        lines += [f"- reference: {reference}" for reference in analysis.test_set.references[index]]
        lines += [f"- {label}: {outputs[index]}" for label, outputs in zip(detail.labels, detail.outputs)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
