"""The configuration's own checks: each key's type, and the rules between keys that need no registry.

Why a module of its own: these are the checks the config package can make alone (the ground floor imports nothing
above it). What a model, dataset, metric or decoding engine accepts is checked beside its registry, and
textbox/checks.py gathers both into one report before anything runs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Mapping

from textbox.config.argv import quoting_hint
from textbox.config.launcher import launcher_problems
from textbox.config.schema import DEFAULTS, PROMPT_METHODS, SCHEMA, ConfigValue
from textbox.config.textbox2.values import TEXTBOX_REFUSED_VALUES
from textbox.utils.labels import LOSS_FIGURES
from textbox.utils.paths import existing_ancestor
from textbox.utils.suggest import where as where_set

_POSITIVE = ("epochs", "train_batch_size", "eval_batch_size", "accumulation_steps", "valid_steps",
             "src_len", "tgt_len", "logging_steps")
_NON_NEGATIVE = ("warmup_steps", "num_workers", "show_examples", "num_shots")
_MAX_SEED = 2**32 - 1


def typed_then_semantics(values: Mapping[str, ConfigValue], sources: Mapping[str, str], lowercase_choices: bool = False,
                         when_typed: Callable[[dict[str, ConfigValue]], list[str]] | None = None,
                         ) -> tuple[list[str], dict[str, ConfigValue]]:
    """Each key's type first, then the cross-key rules: the problems, and the values those rules saw. The rules run
    even when some keys are mistyped, on their defaults (the values returned), so that every problem is reported in
    one go. ``lowercase_choices``: a choice is stored lowercased (the loader's Config); ``when_typed``: checks that
    need every key well typed (what a resumed run may not change), made only then, before the cross-key rules."""
    problems, mistyped = type_problems(values, sources)
    checkable = {name: DEFAULTS[name] if name in mistyped else value for name, value in values.items()}
    if lowercase_choices:
        checkable = {name: value.lower() if name not in mistyped and SCHEMA[name].choices and isinstance(value, str)
                     else value for name, value in checkable.items()}
    if when_typed is not None and not mistyped:
        problems.extend(when_typed(checkable))
    problems.extend(check_semantics(checkable, sources))
    return problems, checkable


def type_problems(values: Mapping[str, ConfigValue], sources: Mapping[str, str]) -> tuple[list[str], set[str]]:
    """Every value that does not fit its key's declared type (or choices), and the names of those keys."""
    problems: list[str] = []
    mistyped: set[str] = set()
    for name, value in values.items():
        error = SCHEMA[name].type_error(value)
        if error:
            pointer = TEXTBOX_REFUSED_VALUES.get(name, {}).get(value) if isinstance(value, str) else None
            error += f": {pointer}" if pointer else quoting_hint(name, value, sources)
            problems.append(f"{where_set(name, sources)} {error}")
            mistyped.add(name)
    return problems, mistyped


def check_semantics(values: Mapping[str, ConfigValue], sources: Mapping[str, str]) -> list[str]:
    """Every cross-key problem in ``values`` that the config package sees alone (the registries check the rest)."""
    problems: list[str] = []
    where = lambda name: where_set(name, sources)  # noqa: E731 - a local shorthand

    for name in _POSITIVE:
        if values[name] < 1:
            problems.append(f"{where(name)} must be at least 1, got {values[name]}")
    for name in _NON_NEGATIVE:
        if values[name] < 0:
            problems.append(f"{where(name)} must be 0 or more, got {values[name]}")
    if values["max_save"] < -1:
        problems.append(f"{where('max_save')} must be -1 (every checkpoint), 0 (none kept), 1 (checkpoint_best), "
                        f"2 (and checkpoint_last) or more (and checkpoint-<step>), got {values['max_save']}")
    if values["resume"] and not values["save_optimizer"]:
        problems.append(f"--resume=True but {where('save_optimizer')} is False: the run's checkpoint_last holds no "
                        f"optimiser state, so it cannot continue exactly; start a new run (another --filename), or "
                        f"fine-tune from its weights with --model_path=<the run directory>/checkpoint_best")
    if values["push_to_hub"] and values["max_save"] == 0:
        problems.append(f"{where('push_to_hub')} uploads checkpoint_best, which {where('max_save')}=0 removes once "
                        f"the run is tested: use --max_save=1 (checkpoint_best alone)")
    problems += _averaging_problems(values, where)
    for name in ("max_steps", "max_tokens", "eval_max_tokens", "num_proc", "tokenizer_train_sample"):
        if values[name] is not None and values[name] < 1:
            problems.append(f"{where(name)} must be at least 1 (or None), got {values[name]}")
    prompts = [method for method in values["efficient_methods"] if method in PROMPT_METHODS]
    if values["packing"] and prompts:
        problems.append(f"{where('packing')} lays several examples in one row, but {prompts[0]} puts its virtual "
                        f"tokens before each row, which all its examples would share: drop --packing or use lora")
    if values["stopping_steps"] is not None and values["stopping_steps"] < 1:
        problems.append(f"{where('stopping_steps')} must be at least 1 (or None)")
    if not values["learning_rate"] > 0:
        problems.append(f"{where('learning_rate')} must be positive, got {values['learning_rate']}")
    if not 0.0 <= values["label_smoothing"] < 1.0:
        problems.append(f"{where('label_smoothing')} must be in [0, 1), got {values['label_smoothing']}")
    if not 0.0 <= values["warmup_ratio"] < 1.0:
        problems.append(f"{where('warmup_ratio')} must be in [0, 1), got {values['warmup_ratio']}")
    if not 0 <= values["seed"] <= _MAX_SEED:  # what numpy's and torch's global generators accept
        problems.append(f"{where('seed')} must be in [0, 2**32 - 1] (= {_MAX_SEED}), the seeds numpy and torch "
                        f"accept, got {values['seed']}")
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
    problems.extend(_output_file_problems(values["output_file"], where))

    problems.extend(_check_pretraining(values, where))
    problems.extend(_tracker_name_problems(values, where))
    problems.extend(launcher_problems(values, sources, where))  # accelerate launch's settings vs the config
    return problems


_PROJECT_FORBIDDEN = "/\\#?%:"  # wandb refuses them in a project; TensorBoard's folder is the project's name


def _tracker_name_problems(values: Mapping[str, ConfigValue], where: Callable[[str], str]) -> list[str]:
    """A tracker project or run name that is given must say something; a project also names a folder."""
    problems = [f"{where(name)} must not be empty (None: the default)" for name in ("tracker_project", "tracker_run_name")
                if values[name] is not None and not values[name].strip()]
    project = values["tracker_project"]
    if project and any(character in project for character in _PROJECT_FORBIDDEN):
        problems.append(f"{where('tracker_project')} must not contain any of {' '.join(_PROJECT_FORBIDDEN)} "
                        f"(wandb refuses them; TensorBoard's events go to the folder <run dir>/<project>), "
                        f"got {project!r}")
    return problems


def _output_file_problems(output_file: str | None, where: Callable[[str], str]) -> list[str]:
    """--output_file is written after every input is decoded: a path that cannot be written (a directory, a path
    under a regular file, a read-only directory) is refused before anything is built."""
    if output_file in (None, "", "-"):
        return []
    path = Path(output_file)
    if path.is_dir():
        return [f"{where('output_file')}: {output_file} is a directory; name a file to write the generations to"]
    holder = existing_ancestor(path.parent)
    if not holder.is_dir():
        return [f"{where('output_file')}: cannot write {output_file}: {holder} is a file, not a directory; "
                f"choose a path in a directory"]
    if not os.access(holder, os.W_OK | os.X_OK):
        return [f"{where('output_file')}: cannot write {output_file}: directory {holder} is not writable; "
                f"choose a writable place"]
    return []


def _check_pretraining(values: Mapping[str, ConfigValue], where: Callable[[str], str]) -> list[str]:
    """Denoising pre-training (textbox/data/denoising.py) is validated by its loss, with settings in range (whether
    the model has a mask token is textbox/model/checks.py's)."""
    if values["pretrain_task"] is None:
        return []
    problems = []
    wanted = [name.lower() for name in values["metrics_for_best_model"]]
    if any(name not in LOSS_FIGURES for name in wanted):
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
    return problems


def _averaging_problems(values: Mapping[str, ConfigValue], where: Callable[[str], str]) -> list[str]:
    """average_checkpoints reads the checkpoint-<step> directories of the last validations: they must exist."""
    count = values["average_checkpoints"]
    if count < 1:
        return [f"{where('average_checkpoints')} must be at least 1 (1 = no averaging), got {count}"]
    if count == 1:
        return []
    if not (values["do_train"] and values["do_valid"]):
        return [f"{where('average_checkpoints')}={count} averages the checkpoints saved at validations during "
                f"training: it needs --do_train=True and --do_valid=True"]
    if values["max_save"] != -1 and values["max_save"] - 2 < count:
        return [f"{where('average_checkpoints')}={count} averages the {count} latest checkpoint-<step>, which "
                f"--max_save={values['max_save']} does not keep: set --max_save to at least {count + 2} "
                f"(it counts checkpoint_best and checkpoint_last too) or -1"]
    return []
