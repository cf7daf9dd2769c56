"""The analysis's PNG plots, drawn with matplotlib's object API on the Agg canvas (no display, no pyplot state)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from textbox.analysis.compute import Analysis
from textbox.studies.common.tables import save_figure

RUN_COLOURS = ("tab:blue", "tab:orange")


def plot_buckets(analysis: Analysis, labels: list[str], path: Path) -> None:
    """The figure per source-length bucket, one bar per run."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.5, 3.8), layout="constrained")
    axis = figure.subplots()
    positions = np.arange(len(analysis.buckets))
    width = 0.8 / len(labels)
    for run, label in enumerate(labels):
        axis.bar(positions + (run - (len(labels) - 1) / 2) * width,
                 [bucket.scores[run] for bucket in analysis.buckets], width, label=label, color=RUN_COLOURS[run])
    axis.set_xticks(positions, [f"{bucket.label}\n(n={bucket.size})" for bucket in analysis.buckets])
    axis.set(title=f"{analysis.figure} by source length", xlabel="source words", ylabel=analysis.figure)
    axis.legend(loc="best", fontsize="small")
    save_figure(figure, path)


def plot_lengths(analysis: Analysis, labels: list[str], path: Path) -> None:
    """Histograms of output lengths against the references' (each example's mean reference length)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.5, 3.8), layout="constrained")
    axis = figure.subplots()
    longest = max(analysis.reference_words.max(), *(words.max() for words in analysis.hypothesis_words))
    bins = np.arange(0, np.ceil(longest) + 2) - 0.5  # one bin per word count
    axis.hist(analysis.reference_words, bins=bins, histtype="stepfilled", color="lightgrey", label="references")
    for run, (label, words) in enumerate(zip(labels, analysis.hypothesis_words)):
        axis.hist(words, bins=bins, histtype="step", linewidth=1.5, color=RUN_COLOURS[run], label=label)
    axis.set(title="output length", xlabel="words", ylabel="examples")
    axis.legend(loc="best", fontsize="small")
    save_figure(figure, path)


def plot_differences(analysis: Analysis, path: Path) -> None:
    """The bootstrap distribution of b - a, with its 95% interval and zero marked."""
    from matplotlib.figure import Figure

    assert analysis.paired is not None, "only a comparison of two runs has differences"
    figure = Figure(figsize=(6.5, 3.8), layout="constrained")
    axis = figure.subplots()
    axis.hist(analysis.paired.differences, bins=40, color="tab:blue", alpha=0.7)
    for bound in analysis.paired.interval:
        axis.axvline(bound, color="tab:orange", linestyle="--")
    axis.axvline(0, color="black", linewidth=1)
    axis.set(title=f"b - a over {analysis.samples} paired resamples (dashed: 95% interval)",
             xlabel=f"{analysis.figure} of b - {analysis.figure} of a", ylabel="resamples")
    save_figure(figure, path)
