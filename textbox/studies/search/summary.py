"""A search's report files: trials.csv (rewritten after every trial), then best.json, search.png, summary.md."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping

from textbox.studies.search.objective import Objective
from textbox.studies.search.store import TrialRecord, trial_name
from textbox.studies.common.tables import markdown_table, plot_search, write_csv
from textbox.utils.atomic import write_text_atomic


def write_trials_csv(directory: Path, records: list[TrialRecord]) -> None:
    labels = _ordered_union(record.params for record in records)
    figures = sorted(set().union(*(record.valid for record in records)))
    header = ["trial", "status", *labels, *(f"valid_{name}" for name in figures), "score", "seconds", "error",
              "run_dir"]
    rows = [[trial_name(r.tid), r.status, *(r.params.get(label) for label in labels),
             *(r.valid.get(name) for name in figures), r.score, r.seconds, r.error, r.run_dir] for r in records]
    write_csv(directory / "trials.csv", header, rows)


def write_search_report(directory: Path, records: list[TrialRecord], best: TrialRecord | None,
                        test: dict[str, float] | None, space: str, algo: str, max_evals: int,
                        objective: Objective) -> str:
    """Write trials.csv, best.json, search.png and summary.md; return the summary's markdown."""
    write_trials_csv(directory, records)
    if best is not None:
        best_json = {"trial": trial_name(best.tid), "params": best.params, "objective": objective.describe(),
                     "score": best.score, "valid": best.valid, "test": test, "run_dir": best.run_dir}
        write_text_atomic(directory / "best.json", json.dumps(best_json, indent=2, default=repr) + "\n")
    stopped = sum(record.stopped for record in records)
    plot_search(directory / "search.png", [r.tid for r in records], [r.score for r in records],
                {label: [r.params.get(label) for r in records] for label in _ordered_union(r.params for r in records)},
                "score (higher is better)", stopped=stopped)
    failed = [record for record in records if record.score is None]
    lines = ["# Hyper-parameter search", "",
             f"- directory: {directory}",
             f"- space: {space}; algorithm: {algo}; trials: {len(records)} of max_evals {max_evals}, "
             f"{len(failed) - stopped} failed" + (f", {stopped} stopped early" if stopped else ""),
             f"- objective: {objective.describe()}; the test split is scored for the best trial only", ""]
    if best is not None:
        lines += [f"## Best: {trial_name(best.tid)}", "",
                  markdown_table(["parameter", "value"], [[label, value] for label, value in best.params.items()]),
                  "", _figures_table(best.valid, test), ""]
    lines += ["## Trials, best first", "", _trials_table(records, objective.names), ""]
    if failed:
        lines += [*(f"- {trial_name(record.tid)} {record.status}: {record.error}" for record in failed), ""]
    lines.append("![score per trial and per parameter](search.png)")
    report = "\n".join(lines) + "\n"
    write_text_atomic(directory / "summary.md", report)
    return report


def _figures_table(valid: dict[str, float], test: dict[str, float] | None) -> str:
    names = [*valid, *(name for name in (test or {}) if name not in valid)]
    return markdown_table(["figure", "valid", "test"],
                          [[name, valid.get(name), (test or {}).get(name)] for name in names])


def _trials_table(records: list[TrialRecord], figures: list[str]) -> str:
    """Best first; the figures the score is made of are shown beside it."""
    labels = _ordered_union(record.params for record in records)
    ranked = sorted(records, key=lambda r: (r.score is None, -(r.score or 0.0), r.tid))
    return markdown_table(["trial", "status", *labels, *(f"valid {name}" for name in figures), "score", "seconds"],
                          [[trial_name(r.tid), r.status, *(r.params.get(label) for label in labels),
                            *(r.valid.get(name) for name in figures), r.score, r.seconds] for r in ranked])


def _ordered_union(mappings: Iterable[Mapping[str, object]]) -> list[str]:
    """Keys of several mappings in first-seen order."""
    return list(dict.fromkeys(key for mapping in mappings for key in mapping))
