"""Build a Config from layered yaml files and `--key=value` command-line arguments, with the config's own checks.

Layers, later wins, in the order textbox.config.layers.LAYERS gives. Command-line values are Python literals
(ast.literal_eval, never eval).

Why this module: merging the layers into one frozen Config, key by key with the origin of each, is the one job
that needs all the others (command line: argv.py, which yaml files: layers.py, a run's own config.yaml:
run_config.py, types and cross-key rules: validate.py). What a model, dataset, metric or decoding engine accepts is
not known here: textbox.checks.load_checked_config adds those checks, and every entry point calls it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping

import yaml

from textbox.config.argv import parse_argv
from textbox.config.errors import ConfigError
from textbox.config.families import yaml_names
from textbox.config.layers import (CONFIG_DIR, Layer, as_file_list, named_layers, read_yaml, run_layer,
                                   with_model_sections)
from textbox.config.other_names import KEY_ALIASES
from textbox.config.run_config import RunLayer, resume_changes
from textbox.config.schema import DEFAULTS, SCHEMA, ConfigValue
from textbox.config.textbox2.translate import check_translations, translate_data_path, translate_layer
from textbox.config.validate import typed_then_semantics
from textbox.utils.suggest import suggest, where

_CONFIG_HEADER = ("# Every key of this run, merged. Rerun it: python run_textbox.py --config_files=<this file>\n"
                  "# (filename and resume are left at their defaults: a rerun is a new run).\n")


if TYPE_CHECKING:
    # mypy reads ``config.<key>`` as the key's annotation in the schema (config.src_len: int); a name that is no key
    # is an error for mypy as at run time.
    from textbox.config.schema import Keys as _KeyTypes
else:
    class _KeyTypes:
        """At run time the values live in Config._values (Config.__getattr__ reads them)."""


class Config(_KeyTypes, Mapping[str, ConfigValue]):
    """A frozen, validated configuration. Read keys as attributes (``config.learning_rate``) or items.

    ``sources`` remembers which layer set each key so that messages can point at the right file. ``checked``: every
    problem was looked for already (textbox.checks.load_checked_config), so that a run does not check it again.
    """

    _checked: bool
    _values: dict[str, ConfigValue]
    _sources: dict[str, str]
    _notes: tuple[str, ...]
    _entry_sources: dict[str, dict[str, str]]

    def __init__(self, values: Mapping[str, ConfigValue], sources: Mapping[str, str] | None = None,
                 notes: Iterable[str] = (), entry_sources: Mapping[str, Mapping[str, str]] | None = None,
                 checked: bool = False):
        object.__setattr__(self, "_checked", checked)
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_sources", dict(sources or {}))
        object.__setattr__(self, "_notes", tuple(notes))
        object.__setattr__(self, "_entry_sources",
                           {key: dict(entries) for key, entries in (entry_sources or {}).items()})

    if not TYPE_CHECKING:  # mypy reads the keys' types from Keys instead
        def __getattr__(self, name: str) -> ConfigValue:
            if name.startswith("_"):  # internal names (and pickle's probes) are never config keys
                raise AttributeError(name)
            try:
                return self._values[name]
            except KeyError:
                raise AttributeError(f"unknown config key {name!r}") from None

    def __reduce__(self) -> tuple[type[Config], tuple[object, ...]]:
        return (Config, (self._values, self._sources, self._notes, self._entry_sources, self._checked))

    @property
    def checked(self) -> bool:
        return self._checked

    def as_checked(self) -> "Config":
        """This config, marked as having passed every check (only textbox.checks gives this mark)."""
        return Config(self._values, self._sources, self._notes, self._entry_sources, checked=True)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Config is frozen; use config.replace(key=value) for a changed copy")

    def __getitem__(self, name: str) -> ConfigValue:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Config({self._values!r})"

    def source_of(self, name: str) -> str:
        return self._sources.get(name, "default")

    def entry_sources(self, name: str) -> dict[str, str]:
        """For a dict key merged from several layers, the layer each of its entries came from ({} otherwise)."""
        value = self._values.get(name)
        entries = self._entry_sources.get(name, {})
        return {entry: entries.get(entry, self.source_of(name)) for entry in value} if isinstance(value, dict) else {}

    def where(self, name: str) -> str:
        """Key ``name`` as messages name it: ``--name``, ``name (default)`` or ``name (from <file>)``."""
        return where(name, self._sources)

    def typed(self, name: str) -> bool:
        """Whether the user gave ``name`` for this run: on the command line (a study's overrides too) or in a
        --config_files file. A default, configs/overall.yaml, a model or dataset yaml and a run's config.yaml are
        not typed: a length from them is fitted to the model (textbox.model.lengths), a typed one is honoured."""
        origin = self.source_of(name)
        return origin == "command line" or origin in self._values.get("config_files", ())

    @property
    def notes(self) -> tuple[str, ...]:
        """What the loader decided for the user (model family read from a checkpoint, a run's config.yaml as a
        layer, warm-up precedence): each is one line of the run's log."""
        return self._notes

    def replace(self, **changes: ConfigValue) -> "Config":
        """A copy with some keys changed (not re-validated: use for runtime-derived values only)."""
        return self.replace_from("runtime", **changes)

    def replace_from(self, origin: str, /, **changes: ConfigValue) -> "Config":
        """``replace``, the changed keys recorded as set by ``origin`` (what messages and the log name)."""
        values = {**self._values, **changes}
        sources = {**self._sources, **{k: origin for k in changes}}
        entry_sources = {k: v for k, v in self._entry_sources.items() if k not in changes}
        return Config(values, sources, self._notes, entry_sources)

    def to_dict(self) -> dict[str, ConfigValue]:
        return dict(self._values)

    def to_yaml(self) -> str:
        """The whole merged config; `--config_files=<this file>` reproduces the run.

        The keys that name a run rather than describe it are written at their defaults (filename: null,
        resume: false): a rerun from this file is a new run, and resuming names its run on the command line."""
        values = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self._values.items()}
        values["config_files"] = []  # already merged in; re-merging would be redundant
        values.update(filename=DEFAULTS["filename"], resume=DEFAULTS["resume"])
        return _CONFIG_HEADER + yaml.safe_dump(values, sort_keys=True, allow_unicode=True)


@dataclass(frozen=True)
class Resolution:
    """A merged configuration and the problems the config package found in it.

    Keys whose value has the wrong type are on their defaults in ``config``, so that further checks (the
    registries', textbox/checks.py) can still run and every problem is reported in one go."""

    config: Config
    problems: list[str]


def load_config(argv: Iterable[str] = (), overrides: Mapping[str, ConfigValue] | None = None,
                config_dir: Path | None = None) -> Config:
    """Merge every layer and return a frozen Config; raise ConfigError with all the config package's problems.

    The registries' checks (model, data, metrics, decoding) are not made here: entry points call
    textbox.checks.load_checked_config, which makes both and reports them together."""
    resolution = resolve_config(argv, overrides, config_dir)
    if resolution.problems:
        raise ConfigError(resolution.problems)
    return resolution.config


def resolve_config(argv: Iterable[str] = (), overrides: Mapping[str, ConfigValue] | None = None,
                   config_dir: Path | None = None) -> Resolution:
    """Merge every layer; collect (not raise) every problem the config package can see.

    ``overrides`` act as an extra command-line layer (used by run_hyper and run_multi_seed). Layers, later wins:
    textbox.config.layers.LAYERS, built here in that order.
    """
    config_dir = Path(config_dir or CONFIG_DIR)
    problems: list[str] = []
    notes: list[str] = []
    cli, argv_problems = parse_argv(argv)
    problems.extend(argv_problems)
    cli.update(overrides or {})

    overall = (str(config_dir / "overall.yaml"), read_yaml(config_dir / "overall.yaml", problems, required=False))
    extra_files = as_file_list(cli.get("config_files", []))
    user_layers = [(f, read_yaml(Path(f), problems, required=True)) for f in extra_files]
    user_layers.append(("command line", cli))

    run = run_layer(overall, user_layers, problems, notes)
    upper = [*([(run.origin, run.values)] if run else []), *user_layers,
             *([(run.implied_origin, run.implied)] if run and run.implied else [])]
    named = [] if run and run.resuming else named_layers(overall, upper, run, problems, notes)

    def current(name: str) -> ConfigValue:
        value = DEFAULTS[name]
        for _, layer in [overall, *named, *upper]:
            value = layer.get(name, value)
        return value

    layers: list[Layer] = [overall, *named, *_family_files(config_dir, current("model"), current("dataset"), problems),
                           *upper]
    layers = with_model_sections(layers, current("model"), run.values if run else None, problems)
    # TextBox 2.0's names become ours in every layer (textbox/config/textbox2/names.py), each with a log line.
    translation_checks: list = []
    layers = [(origin, layer if run is not None and layer is run.values else
               translate_layer(origin, layer, SCHEMA, problems, notes, translation_checks)) for origin, layer in layers]

    values, sources, entry_sources = _merge(layers, run, problems, notes)
    values["config_files"] = extra_files
    translate_data_path(values, sources, run.origin if run else None, notes)
    _resolve_warmup(layers, values, sources, problems, notes)
    _pretraining_tests(values, sources, notes)
    problems.extend(check_translations(translation_checks, values))

    checkable = _checked_values(values, sources, run, problems)
    return Resolution(Config(checkable, sources, notes, entry_sources), problems)


def _checked_values(values: dict[str, ConfigValue], sources: dict[str, str], run: RunLayer | None,
                    problems: list[str]) -> dict[str, ConfigValue]:
    """Types first, then (choices lowercased) what a resumed run may not change and the cross-key checks
    (textbox.config.validate.typed_then_semantics)."""
    resumed = run if run is not None and run.resuming else None
    found, checkable = typed_then_semantics(
        values, sources, lowercase_choices=True,
        when_typed=None if resumed is None else
        lambda typed: resume_changes(typed, sources, resumed, lambda name: where(name, sources)))
    problems.extend(found)
    return checkable


def _merge(layers: list[Layer], run: RunLayer | None, problems: list[str],
           notes: list[str]) -> tuple[dict[str, ConfigValue], dict[str, str], dict[str, dict[str, str]]]:
    """The layers merged in order, later wins (dicts key by key): the values, the layer that set each key, and
    the layer of each entry of a merged dict."""
    values = dict(DEFAULTS)
    sources: dict[str, str] = {}
    entry_sources: dict[str, dict[str, str]] = {}
    # A tested checkpoint's run config holds that run's merged dicts: a later layer's dict replaces them whole.
    checkpoint_run = run.origin if run is not None and not run.resuming else None
    for origin, layer in layers:
        for key, value in layer.items():
            if key not in SCHEMA:
                named_key = f"--{key}" if origin == "command line" else f"{key!r} in {origin}"
                problems.append(f"unknown key {named_key}{suggest(key, SCHEMA, KEY_ALIASES)} "
                                f"(python run_textbox.py --help lists every key)")
                continue
            if SCHEMA[key].kinds == (dict,) and isinstance(value, dict) and isinstance(values[key], dict):
                if checkpoint_run is not None and sources.get(key) == checkpoint_run:
                    notes.append(f"{key}={value!r} ({origin}) replaces the tested run's {key}={values[key]!r} "
                                 f"({checkpoint_run}) whole, not key by key")
                    entry_sources[key] = {}
                else:  # dict keys merge key by key: --config_kwargs={'d_model':64}
                    entry_sources.setdefault(key, {entry: sources.get(key, "default") for entry in values[key]})
                    value = {**values[key], **value}
                entry_sources[key].update({entry: origin for entry in layer[key]})
            else:
                entry_sources.pop(key, None)
            values[key] = value
            sources[key] = origin
    return values, sources, entry_sources


def _family_files(config_dir: Path, model_name: object, dataset_name: object, problems: list[str]) -> list[Layer]:
    """configs/model/<model>.yaml (mt5 has no yaml of its own: t5's applies, textbox.config.families.yaml_names)
    and configs/dataset/<dataset>.yaml, where the names are known."""
    layers: list[Layer] = []
    if isinstance(model_name, str):
        paths = [config_dir / "model" / f"{name}.yaml" for name in yaml_names(model_name)]
        path = next((path for path in paths if path.is_file()), paths[0])
        layers.append((str(path), read_yaml(path, problems, required=False)))
    if isinstance(dataset_name, str):
        path = config_dir / "dataset" / f"{dataset_name}.yaml"
        layers.append((str(path), read_yaml(path, problems, required=False)))
    return layers


def _resolve_warmup(layers: list[Layer], values: dict[str, ConfigValue], sources: dict[str, str],
                    problems: list[str], notes: list[str]) -> None:
    """warmup_steps and warmup_ratio are two ways to say one thing: the later (more specific) layer's wins and
    the other is reset to 0; both non-zero in one layer is an error."""
    winner: tuple[str, str] | None = None
    for origin, layer in layers:
        steps, ratio = layer.get("warmup_steps"), layer.get("warmup_ratio")
        if "warmup_steps" in layer and "warmup_ratio" in layer:
            if _nonzero(steps) and _nonzero(ratio):
                problems.append(f"warmup_steps={steps!r} and warmup_ratio={ratio!r} are both set in "
                                f"{_origin_name(origin)}: keep one "
                                f"(warmup_steps counts steps, warmup_ratio is a fraction of all steps)")
            winner = ("warmup_ratio" if _nonzero(ratio) and not _nonzero(steps) else "warmup_steps", origin)
        elif "warmup_steps" in layer:
            winner = ("warmup_steps", origin)
        elif "warmup_ratio" in layer:
            winner = ("warmup_ratio", origin)
    if winner is None:
        return
    key, origin = winner
    other = "warmup_ratio" if key == "warmup_steps" else "warmup_steps"
    if _nonzero(values[other]) and sources.get(other) != origin:
        notes.append(f"warm-up: {key}={values[key]!r} (from {_origin_name(origin)}) replaces {other}={values[other]!r} "
                     f"(from {_origin_name(sources.get(other, 'default'))}): the later layer's setting wins, "
                     f"{other} is set to 0")
        values[other] = DEFAULTS[other]
        sources[other] = origin


def _pretraining_tests(values: dict[str, ConfigValue], sources: dict[str, str], notes: list[str]) -> None:
    """Pre-training is judged by its validation loss and needs no test split (TextBox 2.0 set do_test=False with a
    pretrain_task): do_test left at its default becomes False; given, it is honoured (a test loss on test.src)."""
    if values["pretrain_task"] is not None and values["do_test"] and sources.get("do_test", "default") == "default":
        values["do_test"], sources["do_test"] = False, "pretrain_task"
        notes.append("pretrain_task: do_test=False (pre-training is judged by its validation loss, as in TextBox 2.0; "
                     "give --do_test=True for a test loss on test.src)")


def _origin_name(origin: str) -> str:
    return "the command line" if origin == "command line" else origin


def _nonzero(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0
