"""Tables and plots of a study's runs, shared by run_hyper (trials) and run_multi_seed (seeds).

Plots use matplotlib's object API on the Agg canvas: no pyplot global state, no display needed.
Every file is written atomically, so a study killed mid-write keeps its previous report.
"""
from __future__ import annotations

import csv
import io
import itertools
import math
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from textbox.utils.atomic import write_text_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Row = Sequence[object]


def format_value(value: object) -> str:
    """Numbers to 4 significant digits, None as '-', anything else as str."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def markdown_table(header: Row, rows: Sequence[Row]) -> str:
    """A padded markdown table: readable printed to a terminal and rendered in summary.md alike."""
    cells = [[format_value(value) for value in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines)


def write_csv(path: Path, header: Row, rows: Sequence[Row]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if value is None else value for value in row] for row in rows)
    write_text_atomic(path, buffer.getvalue())


def plot_search(path: Path, tids: Sequence[int], scores: Sequence[float | None],
                params: dict[str, Sequence[object]], objective: str, stopped: int = 0) -> None:
    """Score per trial (with the running best) and score against each parameter; trials without a score (failed,
    or ``stopped`` early by a scheduler) are left out."""
    from matplotlib.figure import Figure

    figure, axes = _panels(Figure, 1 + len(params))
    ok = [i for i, score in enumerate(scores) if score is not None]
    trial_axis = axes[0]
    trial_axis.scatter([tids[i] for i in ok], [scores[i] for i in ok], color="tab:blue", label="trial")
    running_best = list(itertools.accumulate((scores[i] for i in ok), max))
    trial_axis.step([tids[i] for i in ok], running_best, where="post", color="tab:orange", label="best so far")
    unscored = f"{len(scores) - len(ok) - stopped} failed" + (f", {stopped} stopped early" if stopped else "")
    trial_axis.set(title=f"score per trial ({unscored})", xlabel="trial", ylabel=objective)
    trial_axis.legend(loc="best", fontsize="small")
    for axis, (label, values) in zip(axes[1:], params.items()):
        _scatter_parameter(axis, [values[i] for i in ok], [scores[i] for i in ok])
        axis.set(title=label, xlabel=label, ylabel=objective)
    save_figure(figure, path)


def plot_distributions(path: Path, values: Mapping[str, Sequence[float]]) -> None:
    """One panel per metric: a box plot of the per-seed values with every seed drawn on it."""
    from matplotlib.figure import Figure

    figure, axes = _panels(Figure, len(values))
    for axis, (metric, points) in zip(axes, values.items()):
        axis.boxplot([list(points)], widths=0.5)
        offsets = [1 + 0.15 * (i / max(1, len(points) - 1) - 0.5) for i in range(len(points))]
        axis.scatter(offsets, points, color="tab:blue", zorder=3, s=14)
        axis.set(title=f"{metric} (n={len(points)})", xticks=[])
    save_figure(figure, path)


def save_figure(figure: Figure, path: Path) -> None:
    """Write a PNG through a staging file (named as textbox.utils.atomic names them, so that a resumed search
    removes the one a killed driver left) and an atomic rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        figure.savefig(tmp, dpi=100, format="png")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _panels(figure_class: Any, count: int) -> tuple[Any, list[Any]]:
    columns = min(3, count)
    rows = math.ceil(count / columns)
    figure = figure_class(figsize=(4.5 * columns, 3.5 * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for unused in axes[count:]:
        unused.set_visible(False)
    return figure, axes[:count]


def _scatter_parameter(axis: Any, values: list[Any], scores: list[float]) -> None:
    """Numbers on a numeric axis (logarithmic when they span 100x or more), anything else as categories."""
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    if numeric:
        axis.scatter(values, scores, color="tab:blue")
        positive = [v for v in values if v > 0]
        if len(positive) == len(values) and values and max(positive) >= 100 * min(positive):
            axis.set_xscale("log")
        return
    categories = sorted({repr(v) for v in values})
    axis.scatter([categories.index(repr(v)) for v in values], scores, color="tab:blue")
    axis.set_xticks(range(len(categories)), categories, rotation=20, fontsize="small")
