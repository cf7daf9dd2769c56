"""Datasets that the framework builds itself on first use, so that a fresh checkout runs with no download.

Config validation imports this module to know the built-in names: it must stay free of heavy imports,
so each builder is named as "module:function" and imported only when a build is needed.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable

from textbox.config import Config
from textbox.config.errors import DataError
from textbox.data.catalogue import availability_problem, entry_problems
from textbox.utils.atomic import atomic_directory
from textbox.utils.suggest import suggest

BUILTIN_DATASETS: dict[str, str] = {
    "pydoc": "textbox.data.pydoc:build",
    "pydoc_keywords": "textbox.data.pydoc_keywords:build",
}

PLAIN_FILES = tuple(f"{split}.{side}" for split in ("train", "valid", "test") for side in ("src", "tgt"))


def problems(config: Config) -> list[str]:
    """The dataset a configuration names must exist: a directory, a built-in name, or a hub dataset with its name
    (textbox/checks.py calls this with the other registries' checks, before anything runs)."""
    where = config.where
    if config["data_format"] == "hub":
        if config["hub_name"] or (config["catalogue"] or {}).get("original"):
            return []
        return [f"{where('data_format')} is hub but hub_name is not set"
                + (f" (the catalogue entry {config['dataset']!r} names no original hub dataset)"
                   if config["catalogue"] else "")]
    data_path = Path(config["data_path"] or Path("dataset") / config["dataset"])
    if config["catalogue"]:
        found = entry_problems(config["catalogue"], where("catalogue"))
        if found:
            return found
        if not config["data_path"] and not data_path.is_dir() and config["data_format"] in ("auto", "plain"):
            problem = availability_problem(config["dataset"], config["catalogue"], config["cache_dir"])
            return [f"{where('dataset')}: {problem}"] if problem else []
    if config["data_path"] and _parent_of_datasets(data_path, config["dataset"]):
        return [f"{where('data_path')}={config['data_path']!r} holds no dataset files but a {config['dataset']}/ "
                f"directory: data_path is the dataset's own directory here (TextBox 2.0 joined data_path and "
                f"dataset): give --data_path={data_path / config['dataset']}, or drop data_path "
                f"(dataset/<dataset> is the default)"]
    if data_path.is_dir() or config["dataset"] in BUILTIN_DATASETS:
        return []
    key = "data_path" if config["data_path"] else "dataset"
    hint = suggest(config["dataset"], BUILTIN_DATASETS) if key == "dataset" else ""
    return [f"{where(key)}: dataset directory {data_path} does not exist{hint}; give --data_path=<dir> "
            f"holding train/valid/test files, or a built-in dataset: {', '.join(sorted(BUILTIN_DATASETS))}"]


BUILD_STAMP = "BUILD.txt"  # what a built-in set was built by (its builder's signature()), written beside its files


def ensure_builtin(name: str, directory: Path, log: Callable[[str], None]) -> None:
    """Build the built-in dataset ``name`` into ``directory`` unless it holds a set built under the builder's
    current signature (its rules and the versions of what it reads); a set built under another one is rebuilt.

    The builder writes into a staging directory that is renamed into place at the end: a killed build
    leaves no half dataset that a later run would take for a whole one. Files the builder did not write (no
    BUILD.txt or README.txt of its own) are the user's: read as they are when complete, never replaced.
    """
    directory = Path(directory)
    module_name, function_name = BUILTIN_DATASETS[name].split(":")
    module = importlib.import_module(module_name)
    wanted = module.signature()
    built_by = _built_by(directory, module_name)
    missing = [file for file in PLAIN_FILES if not (directory / file).is_file()]
    if built_by == wanted and not missing:
        return
    if built_by is None:
        if not missing:
            return
        if directory.is_dir() and any(directory.iterdir()):
            raise DataError(f"{directory} lacks {', '.join(missing)} of the built-in dataset {name!r}; "
                            f"delete the directory to have it rebuilt")
        log(f"building the built-in dataset {name!r} in {directory}")
    elif built_by == wanted:
        log(f"rebuilding the built-in dataset {name!r} in {directory}: it lacks {', '.join(missing)}")
    else:
        log(f"rebuilding the built-in dataset {name!r} in {directory}: it was built by {built_by}, "
            f"this version builds {wanted}")
    with atomic_directory(directory) as staging:
        getattr(module, function_name)(staging, log)
        (staging / BUILD_STAMP).write_text(wanted + "\n", encoding="utf-8")


def _built_by(directory: Path, module_name: str) -> str | None:
    """The signature ``directory`` was built under, "an earlier version" for a set that predates BUILD.txt (its
    README.txt names the builder), or None when the builder did not write it."""
    stamp = directory / BUILD_STAMP
    if stamp.is_file():
        return stamp.read_text(encoding="utf-8").strip()
    readme = directory / "README.txt"
    if readme.is_file() and f"Built by {module_name} " in readme.read_text(encoding="utf-8", errors="replace"):
        return "an earlier version"
    return None


def _parent_of_datasets(directory: Path, dataset: str) -> bool:
    """TextBox 2.0's data_path ('dataset/'): a directory of dataset directories, with no split files of its own."""
    if not (directory / dataset).is_dir() or not directory.is_dir():
        return False
    return not any(path.is_file() and path.stem in ("train", "valid", "test") for path in directory.iterdir())
