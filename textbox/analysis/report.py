"""analysis.md and its plots, written into the directory of the run being judged (b, or a when alone)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from textbox.analysis.compute import Analysis
from textbox.analysis.plots import plot_buckets, plot_differences, plot_lengths
from textbox.studies.common.tables import markdown_table
from textbox.utils.atomic import write_text_atomic

REPORT_NAME = "analysis.md"
BUCKETS_PLOT, LENGTHS_PLOT, DIFFERENCES_PLOT = "analysis_buckets.png", "analysis_lengths.png", "analysis_bootstrap.png"
RUN_LABELS = ("a", "b")
SIGNIFICANCE_LEVEL = 0.05


def write_report(analysis: Analysis, examples: int) -> Path:
    """Write the plots and analysis.md (showing ``examples`` examples); return the report's path."""
    directory = analysis.runs[-1].directory
    labels = list(RUN_LABELS[:len(analysis.runs)])
    plot_buckets(analysis, labels, directory / BUCKETS_PLOT)
    plot_lengths(analysis, labels, directory / LENGTHS_PLOT)
    if analysis.paired is not None:
        plot_differences(analysis, directory / DIFFERENCES_PLOT)
    path = directory / REPORT_NAME
    write_text_atomic(path, render(analysis, examples))
    return path


def summary(analysis: Analysis) -> str:
    """The figures and the test's verdict, for the terminal."""
    lines = [f"{label}: {analysis.figure} {statistics.score():.2f} (95% CI {low:.2f}-{high:.2f}), {run.directory}"
             for label, run, statistics, (low, high) in zip(RUN_LABELS, analysis.runs, analysis.statistics,
                                                            analysis.intervals)]
    return "\n".join(lines + ([verdict(analysis)] if analysis.paired is not None else []))


def verdict(analysis: Analysis) -> str:
    assert analysis.paired is not None, "only a comparison of two runs has a verdict"
    paired, higher_is_better = analysis.paired, analysis.statistics[0].higher_is_better
    low, high = paired.interval
    p_value = f"p < {1 / analysis.samples:.2g}" if paired.p_value == 0 else f"p = {paired.p_value:.3f}"
    conclusion = ("b beats a at the 5% level" if paired.p_value < SIGNIFICANCE_LEVEL
                  else "no evidence at the 5% level that b beats a")
    return (f"b - a = {paired.difference:+.2f} {analysis.figure} ({'higher' if higher_is_better else 'lower'} is "
            f"better), 95% CI [{low:+.2f}, {high:+.2f}]; {p_value}: {conclusion}")


def render(analysis: Analysis, examples: int) -> str:
    sections = [_header(analysis), _overall(analysis)]
    if analysis.paired is not None:
        sections.append("## Does b beat a? (paired bootstrap, Koehn 2004)\n\n"
                        f"{verdict(analysis)}. The p-value is the share of resamples in which b does not beat a "
                        f"(ties count half).\n\n![bootstrap differences]({DIFFERENCES_PLOT})")
    sections += [_by_length(analysis), _lengths(analysis)]
    if examples:
        sections.append(_examples(analysis, examples))
    return "\n\n".join(sections) + "\n"


def _header(analysis: Analysis) -> str:
    runs = analysis.runs
    title = (f"# {analysis.figure}: b against a" if len(runs) == 2 else f"# {analysis.figure} of one run")
    lines = [title, ""]
    lines += [f"- {label}: `{run.directory}`" for label, run in zip(RUN_LABELS, runs)]
    lines += [f"- test set: `{runs[0].config.data_path}`, {len(runs[0].test)} examples",
              f"- {analysis.figure}: {analysis.statistics[0].method}",
              f"- bootstrap: {analysis.samples} resamples of the test set, seed {analysis.seed}"]
    if analysis.option_differences:
        lines.append(f"- the runs' metric options differ ({'; '.join(analysis.option_differences)}): "
                     f"both are scored with a's")
    return "\n".join(lines)


def _overall(analysis: Analysis) -> str:
    rows = [[label, statistics.score(), f"{low:.2f} - {high:.2f}"]
            for label, statistics, (low, high) in zip(RUN_LABELS, analysis.statistics, analysis.intervals)]
    return "## Overall\n\n" + markdown_table(["run", analysis.figure, "95% CI"], rows)


def _by_length(analysis: Analysis) -> str:
    labels = RUN_LABELS[:len(analysis.runs)]
    header = ["source words", "examples", *(f"{analysis.figure} {label}" for label in labels),
              *(f"words {label}" for label in labels), "words ref"]
    rows = [[bucket.label, bucket.size, *bucket.scores, *bucket.hypothesis_words,
             bucket.reference_words] for bucket in analysis.buckets]
    return ("## By source length\n\nQuantile buckets of the source length in words; words: mean output and "
            f"reference lengths.\n\n{markdown_table(header, rows)}\n\n![by source length]({BUCKETS_PLOT})")


def _lengths(analysis: Analysis) -> str:
    named = [("references", analysis.reference_words),
             *zip(RUN_LABELS, analysis.hypothesis_words)]
    mean_reference = analysis.reference_words.mean()
    rows = [[name, words.mean(), words.mean() / mean_reference, np.median(words), words.min(), words.max(),
             int(np.count_nonzero(words == 0))] for name, words in named]
    header = ["text", "mean", "ratio to ref", "median", "min", "max", "empty"]
    return ("## Lengths in words\n\nAn example's reference length is the mean over its references.\n\n"
            f"{markdown_table(header, rows)}\n\n![lengths]({LENGTHS_PLOT})")


def _examples(analysis: Analysis, count: int) -> str:
    runs, statistics = analysis.runs, analysis.statistics
    title = "Examples where the runs differ most" if len(runs) == 2 else "Examples the run does worst on"
    blocks = [f"## {title}\n\nBy each example's own {analysis.figure} (see the method above); line numbers are "
              "those of the test files and generation.txt."]
    notable = analysis.notable_examples(count)
    if not notable:
        blocks.append("None: every example has the same score in both runs.")
    for index in notable:
        scores = ", ".join(f"{label} {run_statistics.sentence_scores[index]:.2f}"
                           for label, run_statistics in zip(RUN_LABELS, statistics))
        lines = [f"### Line {index + 1}: {analysis.figure} {scores}", "", f"- source: {runs[0].test.sources[index]}"]
        lines += [f"- reference: {reference}" for reference in runs[0].test.targets[index]]
        lines += [f"- {label}: {run.hypotheses[index]}" for label, run in zip(RUN_LABELS, runs)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
