"""Every problem of a configuration, found before anything is built or written, and reported in one ConfigError.

Why a module of its own: the config package (the ground floor) checks what it can see alone (unknown keys, types,
the rules between keys); what a model, dataset, metric, generation setting or decoding engine accepts is checked
beside its registry (``problems(config)`` in each). This module sits above the registries and below the
pipeline, and gathers both. Every entry point (run_textbox, run_hyper, run_multi_seed, the analysis command,
``pipeline.run`` called directly) goes through it. Nothing heavy is imported: no torch, no transformers unless
--generation_kwargs needs transformers' own check.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

from textbox.config import Config, ConfigError, TextBoxUserError
from textbox.config.loader import resolve_config
from textbox.config.schema import SCHEMA
from textbox.config.validate import typed_then_semantics
from textbox.data import builtin as builtin_datasets
from textbox.data import readers, shots
from textbox.decoding import engine as decoding
from textbox.evaluator import generation_check as generation
from textbox.evaluator.metrics import registry as metrics
from textbox.model import checks as models
from textbox.model import losses
from textbox.trainer import schedules
from textbox.utils.user_dir import import_user_dir
from textbox.utils.hub import push_problems


def load_checked_config(argv: Iterable[str] = (), overrides: Mapping[str, object] | None = None,
                        config_dir: Path | None = None) -> Config:
    """The Config of a command line (and ``overrides``, an extra command-line layer), every problem checked:
    raise one ConfigError listing them all (the config package's and every registry's)."""
    resolution = resolve_config(argv, overrides, config_dir)
    if import_user_code(resolution.config):  # a model it registers has its kind's yaml and per_model sections
        resolution = resolve_config(argv, overrides, config_dir)  # as a built-in's: resolved again, knowing it
    raise_problems([*resolution.problems, *registry_problems(resolution.config)])
    return resolution.config.as_checked()


def import_user_code(config: Config) -> bool:
    """--user_dir's module, imported before the registries are asked (what it registers must be known): a
    TextBoxUserError (exit 2) of one line when it cannot be. Every process imports it, checked Config or not.
    Whether there was one."""
    path = config.get("user_dir")
    if not isinstance(path, str):  # of another type: the type check reports it
        return False
    try:
        import_user_dir(path, config.where("user_dir"))
    except ValueError as error:
        raise TextBoxUserError(str(error)) from None
    return True


def check_config(config: Config) -> None:
    """Check a Config made elsewhere (e.g. by a caller of ``pipeline.run``) as load_checked_config would; one
    that load_checked_config made is not checked twice (its --user_dir is imported all the same: e.g. by a worker
    process it was handed to)."""
    import_user_code(config)
    if config.checked:
        return
    unknown = [name for name in config if name not in SCHEMA]
    missing = [name for name in SCHEMA if name not in config]
    problems = [f"unknown key {name!r} (python run_textbox.py --help lists every key)" for name in unknown]
    problems += [f"key {name!r} is missing from the configuration" for name in missing]
    if problems:
        raise ConfigError(problems)
    sources = {name: config.source_of(name) for name in config}
    problems, checkable = typed_then_semantics(dict(config.items()), sources)
    raise_problems([*problems, *registry_problems(Config(checkable, sources))])


def registry_problems(config: Config) -> list[str]:
    """What each registry finds in ``config``: model, dataset (and the data keys its format reads), metrics,
    decoding engine, generation settings, schedule, training loss, and whether --push_to_hub can push."""
    return [*models.problems(config), *builtin_datasets.problems(config), *readers.key_problems(config),
            *shots.problems(config),
            *metrics.problems(config), *decoding.problems(config), *generation.problems(config),
            *schedules.problems(config), *losses.problems(config),
            *push_problems(config["push_to_hub"], config["hub_model_id"], config["hub_private"], config["do_train"])]


def raise_problems(problems: list[str]) -> None:
    if problems:
        raise ConfigError(problems)
