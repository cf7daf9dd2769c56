"""The yaml layers of a configuration and the layers the loader infers for the user.

Why a module of its own: reading a yaml file (with a message naming the file and line), and deciding which
files join the merge (a run's config.yaml when continuing or testing it, the model family read from a
checkpoint, the dataset named by --data_path), is one job, apart from merging and checking the values
(textbox/config/loader.py). Standard library, yaml and the config package only.
"""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from textbox.config.checkpoint_family import Detected, FamilyError, compatible, detect
from textbox.config.families import FAMILIES
from textbox.config.run_config import (DATA_NAMING, LAST_CHECKPOINT, RunLayer, checkpoint_layer, holds_run,
                                       is_run_directory, resume_layer, run_of_checkpoint)
from textbox.config.schema import DEFAULTS, ConfigValue
from textbox.config.textbox2.translate import is_textbox_data_root
from textbox.utils import yaml_numbers
from textbox.utils.paths import missing_local_path
from textbox.utils.suggest import suggest, where

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = Path(os.environ.get("TEXTBOX_CONFIG_DIR", PROJECT_ROOT / "configs"))

Layer = tuple[str, dict[str, ConfigValue]]  # (origin: a file, "command line", ...; its key: value pairs)

# The layers of a configuration, later wins: the order textbox.config.loader.resolve_config merges them in, written
# only here (`--help` prints LAYER_ORDER; the loader's docstrings point here). The second layer exists only where
# --model or --dataset is not given (named_layers); a run's config.yaml where --resume=True, --model_path=<run dir>
# or --model_path=<a run's checkpoint> names one (run_layer). --model_path=<run dir> adds, above the command line,
# the resume=True, saved_dir and filename it means. Study overrides (run_hyper, run_multi_seed) are command line.
LAYERS: tuple[str, ...] = (
    "configs/overall.yaml",
    "the model family and dataset name read from --model_path and --data_path",
    "configs/model/<model>.yaml",
    "configs/dataset/<dataset>.yaml",
    "the run's config.yaml (resuming it, or testing one of its checkpoints)",
    "--config_files=a.yaml,b.yaml",
    "command line",
)
LAYER_ORDER = ("Layers, later wins: " + " < ".join(LAYERS) + ". A layer's per_model section for the run's model "
               "applies right after that layer.")


def read_yaml(path: Path, problems: list[str], required: bool) -> dict[str, ConfigValue]:
    """The mapping in ``path`` (3e-5 is a number: textbox.utils.yaml_numbers); {} with a problem naming the file
    (and line) when it cannot be used."""
    if not path.is_file():
        if required:
            problems.append(f"config file {path} does not exist")
        return {}
    try:
        loaded = yaml_numbers.load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        problems.append(f"{path}{line}: not valid yaml ({getattr(error, 'problem', error)})")
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


def as_file_list(value: object) -> list[str]:
    """--config_files as a list: 'a.yaml,b.yaml' or ['a.yaml', 'b.yaml']."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, (list, tuple)):
        return [str(part) for part in value]
    return []


def given(layers: list[Layer], name: str) -> tuple[ConfigValue, str] | None:
    """The value of ``name`` in the last of ``layers`` that sets it, and that layer's origin."""
    found = None
    for origin, layer in layers:
        if name in layer:
            found = (layer[name], origin)
    return found


def run_layer(overall: Layer, user_layers: list[Layer], problems: list[str], notes: list[str]) -> RunLayer | None:
    """The run whose config.yaml joins the layers: the one being resumed (--resume=True --filename=...,
    or --model_path=<run dir> when training), or the run that wrote the --model_path checkpoint."""
    def current(name: str) -> ConfigValue:
        found = given([overall, *user_layers], name)
        return found[0] if found else DEFAULTS[name]

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
            found = given(user_layers, key)
            if found is not None and found[0] not in (None, implied[key]):
                problems.append(f"{where(key, {key: found[1]})}={found[0]!r} contradicts --model_path={model_path}, "
                                f"which continues the run {run_dir} (drop --{key})")
        layer = resume_layer(run_dir, read_yaml, problems, implied)
        if layer is not None:
            layer.implied_origin = f"--model_path={model_path}"
            notes.append(f"--model_path={model_path} is a run directory: continuing that run (as --resume=True), "
                         f"with its {layer.origin} as the base layer")
        return layer
    if current("resume") is True and isinstance(current("filename"), str) and current("filename"):
        run_dir = Path(str(current("saved_dir"))) / current("filename")
        if not run_dir.is_dir():
            problems.append(f"--resume=True: run directory {run_dir} does not exist (check --saved_dir/--filename)")
            return None
        layer = resume_layer(run_dir, read_yaml, problems, {})
        if layer is not None:
            notes.append(f"resuming {run_dir}: its {layer.origin} is the base layer; this command may change only "
                         f"reporting and length-of-training keys")
        return layer
    checkpoint_run = run_of_checkpoint(model_path) if isinstance(model_path, str) else None
    if checkpoint_run is not None:
        names_data = any(given(user_layers, key) is not None for key in DATA_NAMING)
        layer = checkpoint_layer(checkpoint_run, read_yaml, problems, training, names_data)
        if layer is not None and not training:
            carried = ", ".join(f"{key}={value!r}" for key, value in layer.values.items())
            data = (f"; it is tested on that run's data (dataset={layer.values['dataset']!r}): give --dataset or "
                    f"--data_path for other data" if "dataset" in layer.values else "")
            notes.append(f"--model_path={model_path} is a checkpoint of the run {checkpoint_run}: its settings "
                         f"apply unless this command sets them ({carried}; from {layer.origin}){data}")
            notes.extend(_quick_test_note(layer, given(user_layers, "quick_test") is not None))
        return layer
    return None


def _quick_test_note(layer: RunLayer, quick_test_given: bool) -> list[str]:
    """A checkpoint of a --quick_test run is tested on whole splits unless this command sets quick_test: say so,
    since a smoke run's checkpoint decoding a whole test split for minutes is a surprise."""
    quick = layer.saved.get("quick_test")
    if quick_test_given or quick in (None, False):
        return []
    return [f"the checkpoint's run used quick_test={quick!r}; this test reads the whole split (give "
            f"--quick_test={quick!r} to test on the same first examples)"]


def named_layers(overall: Layer, upper: list[Layer], run: RunLayer | None, problems: list[str],
                 notes: list[str]) -> list[Layer]:
    """The model family read from --model_path and the dataset named by --data_path, as layers just above
    overall.yaml (so that their yamls apply), unless --model / --dataset were given."""
    layers: list[Layer] = []
    user = [layer for layer in upper if run is None or layer[1] is not run.values]
    explicit = given(user, "model")
    given_path = given([overall, *upper], "model_path")
    model_path = given_path[0] if given_path else None
    if isinstance(model_path, str) and model_path and not _missing_local(model_path):
        detected = _detect(model_path, run, explicit is None, problems)
        if detected is not None and explicit is None:
            layers.append((detected.origin, {"model": detected.family}))
            notes.append(f"model family {detected.family!r} chosen from {detected.origin} (--model was not given; "
                         f"configs/model/{detected.family}.yaml applies)")
        elif detected is not None and explicit is not None and isinstance(explicit[0], str) \
                and not compatible(explicit[0], detected):
            said = detected.family if detected.architecture in (None, detected.family) else \
                f"{detected.family} (a {detected.architecture} architecture)"
            problems.append(f"{where('model', {'model': explicit[1]})}={explicit[0]} contradicts --model_path="
                            f"{model_path}: {detected.origin} says it is {said}; drop --model to use the "
                            f"checkpoint's family, or give --model={detected.family}")
    if given(upper, "dataset") is None:
        data_path = given([overall, *upper], "data_path")
        data_format = given([overall, *upper], "data_format")
        if data_path and isinstance(data_path[0], str) and data_path[0] and not is_textbox_data_root(data_path[0]) \
                and (data_format is None or str(data_format[0]).lower() != "hub"):
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


# Keys that decide which files and sections join the merge: a per_model section cannot set them.
_NOT_PER_MODEL = ("model", "model_path", "dataset", "data_path", "per_model", "config_files")


def with_model_sections(layers: list[Layer], model: object, skip: dict[str, ConfigValue] | None,
                        problems: list[str]) -> list[Layer]:
    """``layers`` with each one's ``per_model`` section for ``model`` right after it (same origin: a section of a
    --config_files file counts as typed like the file). ``skip``: a run's config.yaml, which holds its sections'
    effect already."""

    name = model.lower() if isinstance(model, str) else None
    expanded: list[Layer] = []
    for origin, layer in layers:
        expanded.append((origin, layer))
        sections = layer.get("per_model")
        if sections is None or layer is skip:
            continue
        named = "--per_model" if origin == "command line" else f"'per_model' in {origin}"
        if not isinstance(sections, dict) or not all(isinstance(section, dict) for section in sections.values()):
            problems.append(f"{named} must map model names to settings, e.g. {{transformer: {{epochs: 3}}}}")
            continue
        for model_name, section in sections.items():
            if str(model_name).lower() not in FAMILIES:
                problems.append(f"{named}: unknown model {model_name!r}{suggest(str(model_name).lower(), FAMILIES)}")
            fixed = sorted(set(section) & set(_NOT_PER_MODEL))
            if fixed:
                problems.append(f"{named}: the {model_name!r} section sets {', '.join(fixed)}, which choose the files "
                                f"and sections that apply: set {'it' if len(fixed) == 1 else 'them'} outside per_model")
        chosen = {key.lower(): section for key, section in sections.items() if isinstance(key, str)}.get(name) \
            if name is not None else None
        if chosen:
            expanded.append((origin, {key: value for key, value in chosen.items() if key not in _NOT_PER_MODEL}))
    return expanded
