"""Score several systems' output files against a dataset's test references and compare them in one table:
``python run_analysis.py --dataset=cnndm BART_output.txt T5_output.txt`` (TextBox 2.0's command, run as it is).

Why a module of its own: TextBox 2.0's run_analysis.py scored generated files with the dataset's metrics and
compared the systems. Here the pieces exist already; this module only joins them: the config layers name the
dataset, its test split (textbox.data.readers, the one reader: local copy, catalogue copy or built-in set) and its
metrics with the catalogue entry's options (case, tokenisation, ...), exactly as a run scores its own test pass;
each file is read by the reader textbox-evaluate uses (textbox.data.lines.read_lines) and scored by the metrics
registry. Significance tests of the same files: ``python -m textbox.analysis`` with the same arguments (the first
file is the baseline), which also takes run and seed-study directories.

Options are the run's keys in ``--key=value`` form (--dataset, --data_path, --metrics, metric options,
--config_files=a.yaml,b.yaml); every other word is an output file, one line per test example in order. TextBox 2.0's
``--gen_files`` names them too. Bad input prints one message and exits 2.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from textbox.checks import load_checked_config
from textbox.config.argv import parse_value
from textbox.config.errors import DataError, TextBoxUserError
from textbox.data.lines import read_lines
from textbox.data.readers import read_splits
from textbox.evaluator.metrics.registry import compute_metrics, figure_goal
from textbox.evaluator.score_files import run_command

USAGE = """usage: python run_analysis.py --dataset=<name> [--key=value ...] output_a.txt [output_b.txt ...]

Scores each output file (one line per test example, in order; a run's generation.txt) against the test references
of the dataset, with the metrics and metric options its configs/dataset/<name>.yaml gives (override them with
--metrics="['bleu','rouge']" and the metric keys of `python run_textbox.py --help`), and prints one table: a
column per file, a row per figure; then one JSON line. Keys are run_textbox.py's, in --key=value form (--data_path
for a local copy, --config_files=a.yaml,b.yaml).

Significance (two-sided paired bootstrap and approximate randomisation, sacrebleu's own for bleu/chrf/ter) of each
file against the first, with the same arguments; run and seed-study directories are systems too:
  python -m textbox.analysis --dataset=<name> [--key=value ...] baseline.txt output_b.txt [...] --metrics=bleu,chrf"""


@dataclass
class Comparison:
    """Each system's figures ({file name: {figure: value}}) on one dataset's test split, and which way each
    figure is better ("max", "min", or None for a descriptive one such as length)."""

    dataset: str
    examples: int
    scores: dict[str, dict[str, float]]
    goals: dict[str, str | None]


def split_arguments(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the ``--key=value`` options, the output files). TextBox 2.0's ``--gen_files=['a','b']`` lists files too (and a
    bare ``--gen_files`` before them changes nothing: every word that is not an option is a file)."""
    options: list[str] = []
    files: list[str] = []
    for arg in argv:
        if not arg.startswith("--"):
            files.append(arg)
            continue
        name, has_value, raw = arg[2:].partition("=")
        if name.replace("-", "_") == "gen_files":
            value = parse_value(raw) if has_value else []
            items = value if isinstance(value, (list, tuple)) else str(value).split(",")
            files += [str(item).strip() for item in items if str(item).strip()]
        elif not has_value:
            raise TextBoxUserError(f"{arg}: give options as --key=value (every other word is an output file)")
        else:
            options.append(arg)
    return options, files


def compare(argv: Sequence[str]) -> Comparison:
    """Every output file scored against the test split of the dataset the options name."""
    options, files = split_arguments(argv)
    if not files:
        raise TextBoxUserError("no output files given: python run_analysis.py --dataset=<name> A.txt B.txt")
    missing = [path for path in files if not Path(path).is_file()]
    if missing:
        raise TextBoxUserError(f"output file {missing[0]} does not exist" if len(missing) == 1 else
                               f"output files {', '.join(missing)} do not exist")

    config = load_checked_config(options)
    split = read_splits(config, ["test"], log=lambda message: print(message, file=sys.stderr))["test"]
    outputs = {path: read_lines(path) for path in files}
    wrong = [f"{path} has {len(lines)} lines" for path, lines in outputs.items() if len(lines) != len(split)]
    if wrong:
        raise DataError(f"{'; '.join(wrong)}, but the test split of {config.dataset!r} has {len(split)} examples: "
                        f"an output file holds one line per test example, in order")
    references, sources = [list(refs) for refs in split.targets], list(split.sources)
    scores = {name: compute_metrics(config.metrics, outputs[path], references, sources, config).scores
              for name, path in zip(system_names(files), files)}
    figures = dict.fromkeys(figure for figures in scores.values() for figure in figures)
    return Comparison(config.dataset, len(split), scores, {figure: figure_goal(figure, config) for figure in figures})


def system_names(files: Sequence[str]) -> list[str]:
    """Each file's name without its extension (BART_output.txt -> BART_output), or its path where two share one."""
    stems = [Path(path).stem for path in files]
    return [stem if stems.count(stem) == 1 else path for stem, path in zip(stems, files)]


def format_table(comparison: Comparison) -> str:
    """A row per figure, a column per system; with several systems, the best value of a figure that has a
    direction is starred."""
    systems = list(comparison.scores)
    width = max(len("figure"), *(len(figure) for figure in comparison.goals))
    columns = [max(len(name), 8) for name in systems]
    lines = [f"{comparison.dataset}: {comparison.examples} test examples",
             "  ".join([f"{'figure':<{width}}", *(f"{name:>{column + 1}}" for name, column in zip(systems, columns))])]
    for figure, goal in comparison.goals.items():
        row = [comparison.scores[name].get(figure) for name in systems]
        known = [value for value in row if value is not None]
        best = (max if goal == "max" else min)(known) if goal in ("max", "min") and len(systems) > 1 else None
        cells = ["-" if value is None else f"{value:.2f}{'*' if value == best else ' '}" for value in row]
        lines.append("  ".join([f"{figure:<{width}}", *(f"{cell:>{column + 1}}" for cell, column in
                                                       zip(cells, columns))]))
    if len(systems) > 1:
        lines.append("* the best on that figure; is it significantly better? the same arguments to "
                     "python -m textbox.analysis (the first file is the baseline)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    def work(args: list[str]) -> list[str]:
        comparison = compare(args)
        return [format_table(comparison),
                json.dumps({"dataset": comparison.dataset, "scores": comparison.scores}, ensure_ascii=False)]
    return run_command("run_analysis.py", lambda: USAGE, work, argv)
