"""Build a validated Config from layered yaml files and `--key=value` command-line arguments.

Layers, later wins: configs/overall.yaml < configs/model/<model>.yaml < configs/dataset/<dataset>.yaml
< --config_files=a.yaml,b.yaml < command line. Values are Python literals (ast.literal_eval, never eval).
"""
from __future__ import annotations

import ast
import difflib
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from textbox.config.checkpoint_family import Detected, FamilyError, compatible, detect
from textbox.config.errors import ConfigError
from textbox.config.run_config import (LAST_CHECKPOINT, RunLayer, checkpoint_layer, holds_run, is_run_directory,
                                       resume_changes, resume_layer, run_of_checkpoint)
from textbox.config.schema import DEFAULTS, SCHEMA
from textbox.utils.paths import missing_local_path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = Path(os.environ.get("TEXTBOX_CONFIG_DIR", PROJECT_ROOT / "configs"))


_CONFIG_HEADER = ("# Every key of this run, merged. Rerun it: python run_textbox.py --config_files=<this file>\n"
                  "# (filename and resume are left at their defaults: a rerun is a new run).\n")


class Config(Mapping[str, Any]):
    """A frozen, validated configuration. Read keys as attributes (``config.learning_rate``) or items.

    ``sources`` remembers which layer set each key so that messages can point at the right file.
    """

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, str] | None = None,
                 notes: Iterable[str] = ()):
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_sources", dict(sources or {}))
        object.__setattr__(self, "_notes", tuple(notes))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # internal names (and pickle's probes) are never config keys
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"unknown config key {name!r}") from None

    def __reduce__(self):
        return (Config, (self._values, self._sources, self._notes))

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

    @property
    def notes(self) -> tuple[str, ...]:
        """What the loader decided for the user (model family read from a checkpoint, a run's config.yaml as a
        layer, warm-up precedence): each is one line of the run's log."""
        return self._notes

    def replace(self, **changes: Any) -> "Config":
        """A copy with some keys changed (not re-validated: use for runtime-derived values only)."""
        values = {**self._values, **changes}
        sources = {**self._sources, **{k: "runtime" for k in changes}}
        return Config(values, sources, self._notes)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def to_yaml(self) -> str:
        """The whole merged config; `--config_files=<this file>` reproduces the run.

        The keys that name a run rather than describe it are written at their defaults (filename: null,
        resume: false): a rerun from this file is a new run, and resuming names its run on the command line."""
        values = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self._values.items()}
        values["config_files"] = []  # already merged in; re-merging would be redundant
        values.update(filename=DEFAULTS["filename"], resume=DEFAULTS["resume"])
        return _CONFIG_HEADER + yaml.safe_dump(values, sort_keys=True, allow_unicode=True)


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

    ``overrides`` act as an extra command-line layer (used by run_hyper and run_multi_seed). Layers, later wins:
    overall.yaml < the model family and dataset name read from --model_path / --data_path < model yaml < dataset
    yaml < the run's config.yaml (resuming it, or testing one of its checkpoints) < --config_files < command line.
    """
    config_dir = Path(config_dir or CONFIG_DIR)
    problems: list[str] = []
    notes: list[str] = []
    cli, argv_problems = parse_argv(argv)
    problems.extend(argv_problems)
    cli.update(overrides or {})

    overall = (str(config_dir / "overall.yaml"), _read_yaml(config_dir / "overall.yaml", problems, required=False))
    extra_files = _as_file_list(cli.get("config_files", []))
    user_layers = [(f, _read_yaml(Path(f), problems, required=True)) for f in extra_files]
    user_layers.append(("command line", cli))

    run = _run_layer(overall, user_layers, problems, notes)
    upper = [*([(run.origin, run.values)] if run else []), *user_layers,
             *([(run.implied_origin, run.implied)] if run and run.implied else [])]
    named = [] if run and run.resuming else _named_layers(overall, upper, run, problems, notes)

    def current(name: str) -> Any:
        value = DEFAULTS[name]
        for _, layer in [overall, *named, *upper]:
            value = layer.get(name, value)
        return value

    layers: list[tuple[str, dict[str, Any]]] = [overall, *named]
    model_name = current("model")
    dataset_name = current("dataset")
    if isinstance(model_name, str):
        path = config_dir / "model" / f"{model_name.lower()}.yaml"
        layers.append((str(path), _read_yaml(path, problems, required=False)))
    if isinstance(dataset_name, str):
        path = config_dir / "dataset" / f"{dataset_name}.yaml"
        layers.append((str(path), _read_yaml(path, problems, required=False)))
    layers.extend(upper)

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
    _resolve_warmup(layers, values, sources, problems, notes)

    mistyped = set()
    for name, value in values.items():
        error = SCHEMA[name].type_error(value)
        if error:
            problems.append(f"{_where(name, sources)} {error}{quoting_hint(name, value, sources)}")
            mistyped.add(name)
        elif SCHEMA[name].choices and isinstance(value, str):
            values[name] = value.lower()
    if run is not None and run.resuming and not mistyped:
        problems.extend(resume_changes(values, sources, run, lambda name: _where(name, sources)))
    from textbox.config.validate import check_semantics

    # Cross-key checks run even when some keys are mistyped (on their defaults), so that every
    # problem is reported in one go.
    problems.extend(check_semantics({k: DEFAULTS[k] if k in mistyped else v for k, v in values.items()}, sources))
    if problems:
        raise ConfigError(problems)
    return Config(values, sources, notes)


def _given(layers: list[tuple[str, dict[str, Any]]], name: str) -> tuple[Any, str] | None:
    """The value of ``name`` in the last of ``layers`` that sets it, and that layer's origin."""
    found = None
    for origin, layer in layers:
        if name in layer:
            found = (layer[name], origin)
    return found


def _run_layer(overall: tuple[str, dict[str, Any]], user_layers: list[tuple[str, dict[str, Any]]],
               problems: list[str], notes: list[str]) -> RunLayer | None:
    """The run whose config.yaml joins the layers: the one being resumed (--resume=True --filename=...,
    or --model_path=<run dir> when training), or the run that wrote the --model_path checkpoint."""
    def current(name: str) -> Any:
        given = _given([overall, *user_layers], name)
        return given[0] if given else DEFAULTS[name]

    model_path, training = current("model_path"), current("do_train") is not False
    if isinstance(model_path, str) and holds_run(model_path):  # --model_path=<run dir>
        run_dir = Path(model_path).expanduser()
        if not training or not is_run_directory(run_dir):
            problems.append(f"--model_path={model_path} is a run directory: to test or generate with its model give "
                            f"--model_path={run_dir / 'checkpoint_best'}; to continue training it, it needs "
                            f"{LAST_CHECKPOINT}/ (this one has {'it' if is_run_directory(run_dir) else 'none'}) and "
                            f"--do_train=True")
            return None
        implied = {"resume": True, "saved_dir": str(run_dir.parent), "filename": run_dir.name, "model_path": None}
        for key in ("saved_dir", "filename"):
            given = _given(user_layers, key)
            if given is not None and given[0] not in (None, implied[key]):
                problems.append(f"{_where(key, {key: given[1]})}={given[0]!r} contradicts --model_path={model_path}, "
                                f"which continues the run {run_dir} (drop --{key})")
        layer = resume_layer(run_dir, _read_yaml, problems, implied)
        if layer is not None:
            layer.implied_origin = f"--model_path={model_path}"
            notes.append(f"--model_path={model_path} is a run directory: continuing that run (as --resume=True), "
                         f"with its {layer.origin} as the base layer")
        return layer
    if current("resume") is True and isinstance(current("filename"), str) and current("filename"):
        saved_dir = current("saved_dir")
        run_dir = Path(str(saved_dir)) / current("filename")
        if not run_dir.is_dir():
            problems.append(f"--resume=True: run directory {run_dir} does not exist (check --saved_dir/--filename)")
            return None
        layer = resume_layer(run_dir, _read_yaml, problems, {})
        if layer is not None:
            notes.append(f"resuming {run_dir}: its {layer.origin} is the base layer; this command may change only "
                         f"reporting and length-of-training keys")
        return layer
    checkpoint_run = run_of_checkpoint(model_path) if isinstance(model_path, str) else None
    if checkpoint_run is not None:
        layer = checkpoint_layer(checkpoint_run, _read_yaml, problems, training)
        if layer is not None and not training:
            carried = ", ".join(f"{key}={value!r}" for key, value in layer.values.items())
            notes.append(f"--model_path={model_path} is a checkpoint of the run {checkpoint_run}: its settings "
                         f"apply unless this command sets them ({carried}; from {layer.origin})")
        return layer
    return None


def _named_layers(overall: tuple[str, dict[str, Any]], upper: list[tuple[str, dict[str, Any]]],
                  run: RunLayer | None, problems: list[str], notes: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The model family read from --model_path and the dataset named by --data_path, as layers just above
    overall.yaml (so that their yamls apply), unless --model / --dataset were given."""
    layers: list[tuple[str, dict[str, Any]]] = []
    user = [layer for layer in upper if run is None or layer[1] is not run.values]
    explicit = _given(user, "model")
    given_path = _given([overall, *upper], "model_path")
    model_path = given_path[0] if given_path else None
    if isinstance(model_path, str) and model_path and not _missing_local(model_path):
        detected = _detect(model_path, run, explicit is None, problems)
        if detected is not None and explicit is None:
            layers.append((detected.origin, {"model": detected.family}))
            notes.append(f"model family {detected.family!r} chosen from {detected.origin} (--model was not given; "
                         f"configs/model/{detected.family}.yaml applies)")
        elif detected is not None and isinstance(explicit[0], str) and not compatible(explicit[0], detected):
            said = detected.family if detected.architecture in (None, detected.family) else \
                f"{detected.family} (a {detected.architecture} architecture)"
            problems.append(f"{_where('model', {'model': explicit[1]})}={explicit[0]} contradicts --model_path="
                            f"{model_path}: {detected.origin} says it is {said}; drop --model to use the "
                            f"checkpoint's family, or give --model={detected.family}")
    if _given(upper, "dataset") is None:
        data_path = _given([overall, *upper], "data_path")
        data_format = _given([overall, *upper], "data_format")
        if data_path and isinstance(data_path[0], str) and data_path[0] and \
                (data_format is None or str(data_format[0]).lower() != "hub"):
            name = Path(data_path[0]).expanduser().resolve().name
            if name:
                layers.append((f"the directory name of data_path {data_path[0]}", {"dataset": name}))
                notes.append(f"dataset name {name!r} from --data_path={data_path[0]} (--dataset was not given)")
    return layers


def _missing_local(model_path: str) -> bool:
    """A path that can only be local and does not exist: validation reports it (once)."""
    return missing_local_path(model_path)


def _detect(model_path: str, run: RunLayer | None, required: bool, problems: list[str]) -> Detected | None:
    """The checkpoint's family; a problem when it cannot be read and --model was not given."""
    if run is not None and isinstance(run.saved.get("model"), str):  # a checkpoint of a run: the run says its model
        try:
            architecture = detect(model_path).family
        except FamilyError:
            architecture = None
        return Detected(run.saved["model"].lower(), f"run config {run.origin}", architecture)
    try:
        return detect(model_path)
    except FamilyError as error:
        if required:
            problems.append(str(error))
        return None


def _resolve_warmup(layers: list[tuple[str, dict[str, Any]]], values: dict[str, Any], sources: dict[str, str],
                    problems: list[str], notes: list[str]) -> None:
    """warmup_steps and warmup_ratio are two ways to say one thing: the later (more specific) layer's wins and
    the other is reset to 0; both non-zero in one layer is an error."""
    winner: tuple[str, str] | None = None
    for origin, layer in layers:
        steps, ratio = layer.get("warmup_steps"), layer.get("warmup_ratio")
        if "warmup_steps" in layer and "warmup_ratio" in layer:
            if _nonzero(steps) and _nonzero(ratio):
                problems.append(f"warmup_steps={steps!r} and warmup_ratio={ratio!r} are both set in "
                                f"{_origin(origin)}: keep one "
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
        notes.append(f"warm-up: {key}={values[key]!r} (from {_origin(origin)}) replaces {other}={values[other]!r} "
                     f"(from {_origin(sources.get(other, 'default'))}): the later layer's setting wins, "
                     f"{other} is set to 0")
        values[other] = DEFAULTS[other]
        sources[other] = origin


def _origin(origin: str) -> str:
    return "the command line" if origin == "command line" else origin


def _nonzero(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0


def quoting_hint(name: str, value: Any, sources: Mapping[str, str]) -> str:
    """When the shell ate the quotes of a list or dict (--metrics=[bleu,rouge]), say how to quote it."""
    if sources.get(name) != "command line" or not isinstance(value, str):
        return ""
    kinds = {part.strip().split("[")[0] for part in SCHEMA[name].type.split("|")}
    text = value.strip()
    if not kinds & {"list", "dict"} or not (text[:1] in "[{(" or ("dict" in kinds and ":" in text)):
        return ""
    body = text if text[:1] in "[{(" else "{" + text + "}"
    quoted = re.sub(r"(?<![\w'\"])([A-Za-z_][\w.\-]*)(?![\w'\"])",
                    lambda word: word.group(1) if word.group(1) in ("True", "False", "None") else f"'{word.group(1)}'",
                    body)
    if text[:1] not in "[{(":
        return (f"; the shell split or unquoted it: quote the whole value, e.g. --{name}=\"{quoted}\" "
                f"(an unquoted {{a,b}} is expanded by bash into separate arguments)")
    return f"; the shell removed its quotes: write --{name}=\"{quoted}\" (double quotes around the value)"


def _where(name: str, sources: Mapping[str, str]) -> str:
    origin = sources.get(name, "default")
    if origin == "command line":
        return f"--{name}"
    if origin == "default":
        return f"{name} (default)"
    return f"{name} (from {origin})"
