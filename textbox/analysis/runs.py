"""A finished run as the analysis sees it: its merged config, its test split and its test generations.

The run's config.yaml may name relative paths (data_path, dataset/<name>, model_path), which were relative
to the directory the run was started in. They are anchored there, so the analysis works from any directory.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from textbox.checks import load_checked_config
from textbox.config.errors import DataError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.lines import read_lines
from textbox.data.readers import read_splits
from textbox.data.split import Split
from textbox.utils import yaml_numbers

_PATH_KEYS = ("data_path", "model_path", "bert_score_model_path")  # keys that config validation checks on disk


@dataclass(frozen=True)
class RunOutputs:
    """``hypotheses[i]`` is the run's generation for ``test.sources[i]``."""

    directory: Path
    config: Config
    test: Split
    hypotheses: list[str]


def load_run(directory: Path) -> RunOutputs:
    """Read saved/<run>/ (config.yaml, generation.txt) and the test split its config names."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(f"run directory {directory} does not exist")
    config_path, generation_path = directory / "config.yaml", directory / "generation.txt"
    if not config_path.is_file():
        raise DataError(f"{directory} has no config.yaml; give a run directory (saved/<run>) written by "
                        f"run_textbox.py")
    if not generation_path.is_file():
        raise DataError(f"{directory} has no generation.txt: the run did not test (do_test=False) or did not "
                        f"finish")
    stored = _stored_values(config_path)
    if stored.get("input_file"):
        raise DataError(f"{generation_path} holds the generations for --input_file={stored['input_file']}, not "
                        f"for the test set; analyse a run that tested (without --input_file)")
    config = run_config(directory)
    test = read_splits(config, ["test"])["test"]
    hypotheses = read_lines(generation_path)
    if len(hypotheses) != len(test):
        raise DataError(f"{generation_path} has {len(hypotheses)} lines but the run's test set "
                        f"({config.data_path}) has {len(test)} examples; generation.txt must hold one line per "
                        f"test example, in order")
    return RunOutputs(directory, config, test, hypotheses)


def run_config(directory: Path, options: Sequence[str] = ()) -> Config:
    """The run's config.yaml, its relative paths anchored, with ``options`` (``--key=value``) over it: the metric
    options to score the run's outputs with, when they differ from the run's own."""
    config_path = Path(directory) / "config.yaml"
    return load_checked_config([f"--config_files={config_path}", *options],
                               overrides=_anchored_paths(_stored_values(config_path), Path(directory)))


def _stored_values(config_path: Path) -> dict[str, object]:
    try:
        values = yaml_numbers.load(config_path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise DataError(f"{config_path} is not a readable config.yaml ({error})") from error
    if not isinstance(values, dict):
        raise DataError(f"{config_path} must be a mapping of key: value, as run_textbox.py writes it")
    return values


def _anchored_paths(stored: Mapping[str, Any], run_dir: Path) -> dict[str, str]:
    """Absolute versions of the run's relative paths, found under the run's launch directory or the current one.

    A dataset directory that is found nowhere is an error: read_splits would otherwise rebuild a built-in
    dataset in the current directory, which need not be the set the run was tested on.
    """
    bases = _launch_directories(run_dir, str(stored.get("saved_dir", DEFAULTS["saved_dir"])))
    paths = {key: stored.get(key) for key in _PATH_KEYS}
    dataset_directory = paths["data_path"] or str(Path("dataset") / stored.get("dataset", DEFAULTS["dataset"]))
    paths["data_path"] = dataset_directory
    anchored = {}
    for key, value in paths.items():
        if isinstance(value, str) and not Path(value).is_absolute():
            found = [base / value for base in bases if (base / value).exists()]
            if found:
                anchored[key] = str(found[0])
    if stored.get("data_format") != "hub" and not Path(anchored.get("data_path", dataset_directory)).is_dir():
        looked_in = ", ".join(str(base) for base in bases)
        raise DataError(f"the test set of run {run_dir} is not found: {dataset_directory} does not exist "
                        f"(looked in {looked_in}); run python -m textbox.analysis from the directory the run was "
                        f"started in")
    return anchored


def _launch_directories(run_dir: Path, saved_dir: str) -> list[Path]:
    """Where the run was started: run_dir minus its saved_dir (when saved_dir was relative), then here."""
    bases = []
    parent = run_dir.resolve().parent
    saved_parts = Path(saved_dir).parts
    depth = len(saved_parts)
    if not Path(saved_dir).is_absolute() and parent.parts[len(parent.parts) - depth:] == saved_parts:
        bases.append(Path(*parent.parts[:len(parent.parts) - depth]))
    if Path.cwd() not in bases:
        bases.append(Path.cwd())
    return bases
