"""Checks that need more than one key or a look at the disk; run once all types are right.

Cheap by design: registries are consulted by name, nothing heavy (torch, transformers) is imported.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from textbox.config.loader import _where, suggest

_POSITIVE = ("epochs", "train_batch_size", "eval_batch_size", "accumulation_steps", "valid_steps",
             "src_len", "tgt_len", "logging_steps")
_NON_NEGATIVE = ("warmup_steps", "max_save", "num_workers")


def check_semantics(values: Mapping[str, Any], sources: Mapping[str, str]) -> list[str]:
    """Return every cross-key problem in ``values`` (empty when the config is usable)."""
    problems: list[str] = []
    where = lambda name: _where(name, sources)  # noqa: E731 - a local shorthand

    for name in _POSITIVE:
        if values[name] < 1:
            problems.append(f"{where(name)} must be at least 1, got {values[name]}")
    for name in _NON_NEGATIVE:
        if values[name] < 0:
            problems.append(f"{where(name)} must be 0 or more, got {values[name]}")
    if values["max_steps"] is not None and values["max_steps"] < 1:
        problems.append(f"{where('max_steps')} must be at least 1 (or None), got {values['max_steps']}")
    for name in ("max_tokens", "eval_max_tokens"):
        if values[name] is not None and values[name] < 1:
            problems.append(f"{where(name)} must be at least 1 (or None), got {values[name]}")
    if values["stopping_steps"] is not None and values["stopping_steps"] < 1:
        problems.append(f"{where('stopping_steps')} must be at least 1 (or None)")
    if not values["learning_rate"] > 0:
        problems.append(f"{where('learning_rate')} must be positive, got {values['learning_rate']}")
    if not 0.0 <= values["label_smoothing"] < 1.0:
        problems.append(f"{where('label_smoothing')} must be in [0, 1), got {values['label_smoothing']}")
    if not 0.0 <= values["warmup_ratio"] < 1.0:
        problems.append(f"{where('warmup_ratio')} must be in [0, 1), got {values['warmup_ratio']}")
    quick = values["quick_test"]
    if not isinstance(quick, bool) and quick < 1:
        problems.append(f"{where('quick_test')} must be True/False or a number of lines >= 1, got {quick}")

    if values["resume"] and not values["filename"]:
        problems.append(f"{where('resume')} needs --filename=<the run directory's name> (and its --saved_dir)")
    if values["resume"] and not values["do_train"]:
        problems.append(f"{where('resume')} continues training; it needs --do_train=True")

    if values["output_file"] and not values["input_file"]:
        problems.append(f"{where('output_file')} needs --input_file=<sources, one per line> (test generations "
                        f"always go to the run directory's generation.txt)")
    if values["input_file"] not in (None, "-") and not Path(values["input_file"]).is_file():
        problems.append(f"{where('input_file')}: file {values['input_file']} does not exist")

    problems.extend(_check_model(values, where))
    problems.extend(_check_dataset(values, where))
    problems.extend(_check_metrics(values, where))
    return problems


def _check_model(values: Mapping[str, Any], where) -> list[str]:
    from textbox.model.registry import MODELS

    name = values["model"].lower()
    if name not in MODELS:
        return [f"{where('model')}: unknown model {values['model']!r}{suggest(name, MODELS)}; "
                f"available: {', '.join(sorted(MODELS))}"]
    problems = []
    path = values["model_path"]
    if MODELS[name].needs_model_path and not path:
        problems.append(f"{where('model')}: model {name!r} needs --model_path=<hub id or local directory>")
    if path and _looks_local(path) and not Path(path).exists():
        problems.append(f"{where('model_path')}: directory {path} does not exist")
    return problems


def _looks_local(path: str) -> bool:
    return path.startswith((".", "/", "~")) or Path(path).exists() or path.count("/") > 1


def _check_dataset(values: Mapping[str, Any], where) -> list[str]:
    from textbox.data.builtin import BUILTIN_DATASETS

    if values["data_format"] == "hub":
        return [] if values["hub_name"] else [f"{where('data_format')} is hub but hub_name is not set"]
    data_path = Path(values["data_path"] or Path("dataset") / values["dataset"])
    if data_path.is_dir() or values["dataset"] in BUILTIN_DATASETS:
        return []
    key = "data_path" if values["data_path"] else "dataset"
    hint = suggest(values["dataset"], BUILTIN_DATASETS) if key == "dataset" else ""
    return [f"{where(key)}: dataset directory {data_path} does not exist{hint}; give --data_path=<dir> "
            f"holding train/valid/test files, or a built-in dataset: {', '.join(sorted(BUILTIN_DATASETS))}"]


def _check_metrics(values: Mapping[str, Any], where) -> list[str]:
    from textbox.evaluator.metrics.registry import figure_goal, known_metrics, metric_outputs, option_problems

    problems = []
    outputs: set[str] = {"loss"}
    for name in values["metrics"]:
        try:
            outputs.update(metric_outputs(name, values))
        except KeyError:
            problems.append(f"{where('metrics')}: unknown metric {name!r}{suggest(name.lower(), known_metrics())}; "
                            f"available: {', '.join(sorted(known_metrics()))}")
    if not values["metrics_for_best_model"]:
        problems.append(f"{where('metrics_for_best_model')} must name at least one figure, e.g. ['loss']")
    for name in values["metrics_for_best_model"]:
        if name.lower() not in outputs:
            problems.append(f"{where('metrics_for_best_model')}: {name!r} is not produced by metrics="
                            f"{list(values['metrics'])}{suggest(name.lower(), outputs)}; "
                            f"choose from {', '.join(sorted(outputs))}")
        elif name.lower() != "loss" and figure_goal(name, values) is None:
            problems.append(f"{where('metrics_for_best_model')}: {name!r} is descriptive (neither higher nor lower "
                            f"is better) and cannot choose a model")
    problems.extend(option_problems(values["metrics"], values, where))
    return problems
