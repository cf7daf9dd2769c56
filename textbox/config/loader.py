"""Build a validated Config from layered yaml files and `--key=value` command-line arguments.

Layers, later wins: configs/overall.yaml < configs/model/<model>.yaml < configs/dataset/<dataset>.yaml
< --config_files=a.yaml,b.yaml < command line. Values are Python literals (ast.literal_eval, never eval).
"""
from __future__ import annotations

import ast
import difflib
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from textbox.config.errors import ConfigError
from textbox.config.schema import DEFAULTS, SCHEMA

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = Path(os.environ.get("TEXTBOX_CONFIG_DIR", PROJECT_ROOT / "configs"))


class Config(Mapping[str, Any]):
    """A frozen, validated configuration. Read keys as attributes (``config.learning_rate``) or items.

    ``sources`` remembers which layer set each key so that messages can point at the right file.
    """

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, str] | None = None):
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_sources", dict(sources or {}))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # internal names (and pickle's probes) are never config keys
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"unknown config key {name!r}") from None

    def __reduce__(self):
        return (Config, (self._values, self._sources))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Config is frozen; use config.replace(key=value) for a changed copy")

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Config({self._values!r})"

    def source_of(self, name: str) -> str:
        return self._sources.get(name, "default")

    def replace(self, **changes: Any) -> "Config":
        """A copy with some keys changed (not re-validated: use for runtime-derived values only)."""
        values = {**self._values, **changes}
        sources = {**self._sources, **{k: "runtime" for k in changes}}
        return Config(values, sources)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def to_yaml(self) -> str:
        """The whole merged config; `--config_files=<this file>` reproduces the run."""
        values = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self._values.items()}
        values["config_files"] = []  # already merged in; re-merging would be redundant
        return yaml.safe_dump(values, sort_keys=True, allow_unicode=True)


def parse_value(text: str) -> Any:
    """A command-line value as a Python literal; anything that is not a literal stays a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def parse_argv(argv: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """Parse ``--key=value`` / ``--key value`` pairs. Returns the values and the malformed arguments."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or arg == "--":
            problems.append(f"argument {arg!r} is not of the form --key=value")
            i += 1
            continue
        body = arg[2:]
        if "=" in body:
            key, raw = body.split("=", 1)
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            key, raw = body, args[i + 1]
            i += 1
        else:
            key, raw = body, "True"  # a bare flag: --do_train means --do_train=True
        values[key.replace("-", "_")] = parse_value(raw)
        i += 1
    return values, problems


def _read_yaml(path: Path, problems: list[str], required: bool) -> dict[str, Any]:
    if not path.is_file():
        if required:
            problems.append(f"config file {path} does not exist")
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problems.append(f"{path}{where}: not valid yaml ({getattr(error, 'problem', error)})")
        return {}
    except UnicodeDecodeError:
        problems.append(f"{path}: not UTF-8 text")
        return {}
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        problems.append(f"{path}: must be a mapping of key: value, not {type(loaded).__name__}")
        return {}
    return loaded


def _as_file_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)):
        return [str(part) for part in value]
    return []


def suggest(name: str, options: Iterable[str]) -> str:
    """A ' did you mean ...?' hint for a misspelled name, or an empty string."""
    matches = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
    return f"; did you mean {matches[0]!r}?" if matches else ""


def load_config(argv: Iterable[str] = (), overrides: Mapping[str, Any] | None = None,
                config_dir: Path | None = None) -> Config:
    """Merge every layer, validate, and return a frozen Config; raise ConfigError with all problems.

    ``overrides`` act as an extra command-line layer (used by run_hyper and run_multi_seed).
    """
    config_dir = Path(config_dir or CONFIG_DIR)
    problems: list[str] = []
    cli, argv_problems = parse_argv(argv)
    problems.extend(argv_problems)
    cli.update(overrides or {})

    layers: list[tuple[str, dict[str, Any]]] = [
        (str(config_dir / "overall.yaml"), _read_yaml(config_dir / "overall.yaml", problems, required=False))
    ]
    extra_files = _as_file_list(cli.get("config_files", []))
    extra_layers = [(f, _read_yaml(Path(f), problems, required=True)) for f in extra_files]

    def current(name: str) -> Any:
        value = DEFAULTS[name]
        for _, layer in [*layers, *extra_layers, ("command line", cli)]:
            value = layer.get(name, value)
        return value

    model_name = current("model")
    dataset_name = current("dataset")
    if isinstance(model_name, str):
        path = config_dir / "model" / f"{model_name.lower()}.yaml"
        layers.append((str(path), _read_yaml(path, problems, required=False)))
    if isinstance(dataset_name, str):
        path = config_dir / "dataset" / f"{dataset_name}.yaml"
        layers.append((str(path), _read_yaml(path, problems, required=False)))
    layers.extend(extra_layers)
    layers.append(("command line", cli))

    values = dict(DEFAULTS)
    sources: dict[str, str] = {}
    for origin, layer in layers:
        for key, value in layer.items():
            if key not in SCHEMA:
                where = f"--{key}" if origin == "command line" else f"{key!r} in {origin}"
                problems.append(f"unknown key {where}{suggest(key, SCHEMA)} "
                                f"(python run_textbox.py --help lists every key)")
                continue
            if SCHEMA[key].type == "dict" and isinstance(value, dict) and isinstance(values[key], dict):
                value = {**values[key], **value}  # dict keys merge key by key: --config_kwargs={'d_model':64}
            values[key] = value
            sources[key] = origin
    values["config_files"] = extra_files

    mistyped = set()
    for name, value in values.items():
        error = SCHEMA[name].type_error(value)
        if error:
            problems.append(f"{_where(name, sources)} {error}")
            mistyped.add(name)
        elif SCHEMA[name].choices and isinstance(value, str):
            values[name] = value.lower()
    from textbox.config.validate import check_semantics

    # Cross-key checks run even when some keys are mistyped (on their defaults), so that every
    # problem is reported in one go.
    problems.extend(check_semantics({k: DEFAULTS[k] if k in mistyped else v for k, v in values.items()}, sources))
    if problems:
        raise ConfigError(problems)
    return Config(values, sources)


def _where(name: str, sources: Mapping[str, str]) -> str:
    origin = sources.get(name, "default")
    if origin == "command line":
        return f"--{name}"
    if origin == "default":
        return f"{name} (default)"
    return f"{name} (from {origin})"
