"""Checks that need more than one key or a look at the disk; run once all types are right.

Cheap by design: registries are consulted by name, nothing heavy (torch, transformers) is imported.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from textbox.config.loader import _where, suggest
from textbox.decoding.engine import decoding_problems

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

    problems.extend(_check_model(values, where, sources))
    problems.extend(_check_dataset(values, where))
    problems.extend(_check_metrics(values, where))
    problems.extend(_check_efficient(values, where))
    problems.extend(_check_pretraining(values, where))
    problems.extend(decoding_problems(values, where))  # --decoding_backend / --decoding_precision
    from textbox.config.launcher import launcher_problems  # accelerate launch's settings vs the config

    problems.extend(launcher_problems(values, sources, where))
    from textbox.evaluator.generation_check import generation_problems  # imports transformers only when set

    problems.extend(generation_problems(values["generation_kwargs"], where))
    return problems


def _check_model(values: Mapping[str, Any], where, sources: Mapping[str, str]) -> list[str]:
    """A known model with the paths it needs, and no key set that its builder cannot honour
    (textbox/model/keys.py declares, per family, what each builder honours)."""
    from textbox.model import keys
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
    from textbox.model.files import damaged_files

    for key in ("model_path", "decoder_model_path"):  # found before a run directory exists; the loader names
        damaged = damaged_files(values[key]) if values[key] else []  # any other file it cannot read
        if damaged:
            problems.append(f"{where(key)}: {'; '.join(damaged)}; the checkpoint is damaged (e.g. an interrupted "
                            f"copy or a full disk): restore it from a copy, or write it again")
    problems.extend(keys.problems(MODELS[name].family, values, sources, where))
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


def _check_efficient(values: Mapping[str, Any], where) -> list[str]:
    """Parameter-efficient tuning (textbox/model/efficient.py) and encoder-decoder pairs."""
    from textbox.model.efficient import is_efficient_checkpoint, method_problems

    methods = list(values["efficient_methods"])
    problems = [f"{where('efficient_methods')}: {problem}" for problem in method_problems(methods)]
    if values["efficient_unfreeze_model"] and not methods:
        problems.append(f"{where('efficient_unfreeze_model')} needs --efficient_methods (without a method the "
                        f"whole model trains anyway)")
    if values["efficient_kwargs"] and not methods:
        problems.append(f"{where('efficient_kwargs')} needs --efficient_methods=[<method>] to apply to")
    if methods and not values["efficient_unfreeze_model"] and (not values["model_path"] or values["from_scratch"]):
        problems.append(f"{where('efficient_methods')} tune a pretrained model that loads again from --model_path "
                        f"(only the tuned parameters are saved): give --model_path without --from_scratch=True, "
                        f"or add --efficient_unfreeze_model=True to train and save the whole model")
    if methods and methods[0].lower() == "bitfit" and values["efficient_kwargs"]:
        problems.append(f"{where('efficient_kwargs')}: bitfit takes no settings, got {values['efficient_kwargs']}")
    if methods and values["do_train"] and is_efficient_checkpoint(values["model_path"]):
        problems.append(f"{where('efficient_methods')}: --model_path={values['model_path']} holds an efficient "
                        f"checkpoint already, which continues training as it is; drop --efficient_methods (or "
                        f"give its base model as --model_path)")
    decoder = values["decoder_model_path"]
    if decoder and _looks_local(decoder) and not Path(decoder).exists():
        problems.append(f"{where('decoder_model_path')}: directory {decoder} does not exist")
    return problems


# Model families whose tokenizers have no mask token (T5 and Marian use none; T5 has sentinel tokens instead).
_NO_MASK_MODELS = ("t5", "marian")


def _check_pretraining(values: Mapping[str, Any], where) -> list[str]:
    """Denoising pre-training (textbox/data/denoising.py): validated by loss, on a model with a mask token
    (families known to lack one are named here; the collator checks any other loaded tokenizer)."""
    if values["pretrain_task"] is None:
        return []
    problems = []
    wanted = [name.lower() for name in values["metrics_for_best_model"]]
    if any(name not in ("loss", "perplexity") for name in wanted):
        problems.append(f"{where('metrics_for_best_model')}: pre-training is validated by its loss (the target is "
                        f"the input itself, so generation metrics mean nothing): use ['loss'], got "
                        f"{list(values['metrics_for_best_model'])}")
    if not 0.0 <= values["mask_ratio"] <= 1.0:
        problems.append(f"{where('mask_ratio')} must be in [0, 1], got {values['mask_ratio']}")
    if not values["poisson_lambda"] > 0:
        problems.append(f"{where('poisson_lambda')} must be positive (the mean span length), "
                        f"got {values['poisson_lambda']}")
    if not 0.0 <= values["permute_sentence_ratio"] <= 1.0:
        problems.append(f"{where('permute_sentence_ratio')} must be in [0, 1], got {values['permute_sentence_ratio']}")
    name = values["model"].lower()  # decoder-only families: refused by textbox/model/keys.py (_check_model)
    if name in _NO_MASK_MODELS:
        problems.append(f"{where('pretrain_task')}: denoising replaces spans with a mask token and model {name!r}'s "
                        f"tokenizer has none; use e.g. transformer, rnn/gru/lstm or a BART checkpoint")
    return problems
