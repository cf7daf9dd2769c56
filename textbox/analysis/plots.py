"""The analysis's PNG plots, drawn with matplotlib's object API on the Agg canvas (no display, no pyplot state)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from textbox.analysis.compute import Detail
from textbox.studies.common.tables import save_figure


def _colour(index: int) -> str:
    return f"C{index % 10}"


def plot_buckets(detail: Detail, path: Path) -> None:
    """The figure per source-length bucket, one bar per system."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.5, 3.8), layout="constrained")
    axis = figure.subplots()
    positions = np.arange(len(detail.buckets))
    width = 0.8 / len(detail.labels)
    for index, label in enumerate(detail.labels):
        axis.bar(positions + (index - (len(detail.labels) - 1) / 2) * width,
                 [bucket.scores[index] for bucket in detail.buckets], width, label=label, color=_colour(index))
    axis.set_xticks(positions, [f"{bucket.label}\n(n={bucket.size})" for bucket in detail.buckets])
    axis.set(title=f"{detail.figure} by source length", xlabel="source words", ylabel=detail.figure)
    axis.legend(loc="best", fontsize="small")
    save_figure(figure, path)


def plot_lengths(detail: Detail, path: Path) -> None:
    """Histograms of output lengths against the references' (each example's mean reference length)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.5, 3.8), layout="constrained")
    axis = figure.subplots()
    longest = max(detail.reference_words.max(), *(words.max() for words in detail.hypothesis_words))
    bins = (np.arange(0, np.ceil(longest) + 2) - 0.5).tolist()  # one bin per word count
    axis.hist(detail.reference_words, bins=bins, histtype="stepfilled", color="lightgrey", label="references")
    for index, (label, words) in enumerate(zip(detail.labels, detail.hypothesis_words)):
        axis.hist(words, bins=bins, histtype="step", linewidth=1.5, color=_colour(index), label=label)
    axis.set(title="output length", xlabel="words", ylabel="examples")
    axis.legend(loc="best", fontsize="small")
    save_figure(figure, path)


def plot_differences(detail: Detail, samples: int, path: Path) -> None:
    """The bootstrap distribution of each system's figure minus the first one's, zero marked."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.5, 3.8), layout="constrained")
    axis = figure.subplots()
    for index, (label, differences) in enumerate(detail.differences.items(), start=1):
        axis.hist(differences, bins=40, color=_colour(index), alpha=0.5, label=f"{label} - {detail.labels[0]}")
    axis.axvline(0, color="black", linewidth=1)
    axis.set(title=f"differences over {samples} paired resamples", xlabel=detail.figure, ylabel="resamples")
    axis.legend(loc="best", fontsize="small")
    save_figure(figure, path)
