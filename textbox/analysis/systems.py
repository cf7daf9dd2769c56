"""The systems an analysis compares, and the one test set they are all scored on.

A system is a finished run directory (its generation.txt), a seed-study directory (each finished seed-<s>/ run's
generation.txt) or a plain output file (one line per test example, in order: a published system's outputs). The
references come from ``--ref`` (a file as textbox-evaluate reads it), else from the dataset the ``--key=value``
options name (as run_analysis.py reads it), else from the first run's test split; every run must have been tested
on that same set and every output file must hold one line per example. Metric options come from those options, or,
beside run directories, from the first run's config with the options given over it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from textbox.analysis.runs import RunOutputs, load_run, run_config
from textbox.checks import load_checked_config
from textbox.config.errors import DataError, TextBoxUserError
from textbox.config.loader import Config
from textbox.data.lines import parse_references, read_lines
from textbox.data.readers import read_splits

RUN, SEED_STUDY, FILE = "run", "seed study", "file"
_DATA_OPTIONS = ("--dataset=", "--data_path=", "--config_files=")  # options that name the references' dataset


@dataclass(frozen=True)
class System:
    """``outputs[k]`` is one run's output lines: one list for a run or a file, one per finished seed of a study."""

    name: str
    kind: str
    path: Path
    outputs: list[list[str]]
    seeds: list[int] | None  # a seed study's finished seeds, in the order of outputs
    runs: list[RunOutputs]  # the run directories behind it (none for a file)


@dataclass(frozen=True)
class TestSet:
    references: list[list[str]]
    sources: list[str] | None  # unknown when the references come from --ref alone
    options: Config  # the metric options every system is scored with
    origin: str  # where the references were read, for the report


def load_systems(paths: Sequence[str], config_options: Sequence[str], reference_file: str | None,
                 baseline: str | None) -> tuple[list[System], TestSet]:
    """Every system (the baseline first) and the test set, checked against one another."""
    names = system_names(paths)
    systems = [_load_system(name, Path(path)) for name, path in zip(names, paths)]
    if baseline is not None:
        systems.insert(0, systems.pop(_baseline_index(systems, paths, baseline)))
    test_set = _test_set(systems, config_options, reference_file)
    for system in systems:
        _check_fits(system, test_set)
    return systems, test_set


def system_names(paths: Sequence[str]) -> list[str]:
    """A file's name without its extension, a directory's name; the path where two share a name."""
    stems = [Path(path).stem if Path(path).is_file() else Path(path).name for path in paths]
    return [stem if stems.count(stem) == 1 else str(path) for stem, path in zip(stems, paths)]


def _baseline_index(systems: list[System], paths: Sequence[str], baseline: str) -> int:
    for index, (system, path) in enumerate(zip(systems, paths)):
        if baseline in (system.name, path) or Path(baseline).resolve() == system.path.resolve():
            return index
    names = ", ".join(system.name for system in systems)
    raise TextBoxUserError(f"--baseline={baseline} is none of the systems given ({names}); name one by its name or "
                           f"path")


def _load_system(name: str, path: Path) -> System:
    if path.is_file():
        return System(name, FILE, path, [read_lines(path)], None, [])
    if not path.is_dir():
        raise DataError(f"system {path} does not exist: give a run directory, a seed-study directory or an output "
                        f"file")
    if (path / "config.yaml").is_file():
        run = load_run(path)
        return System(name, RUN, path, [run.hypotheses], None, [run])
    seed_dirs = sorted((child for child in path.glob("seed-*") if child.is_dir() and child.name[5:].lstrip("-")
                        .isdigit()), key=lambda child: int(child.name[5:]))
    if not seed_dirs:
        raise DataError(f"{path} is neither a run directory (no config.yaml) nor a seed study (no seed-<s>/ runs): "
                        f"give saved/<run>, saved/multi_seed-<timestamp> or an output file")
    finished = [directory for directory in seed_dirs if (directory / "generation.txt").is_file()]
    if not finished:
        raise DataError(f"seed study {path}: none of its {len(seed_dirs)} seed runs has a generation.txt (they "
                        f"failed or did not test)")
    runs = [load_run(directory) for directory in finished]
    return System(name, SEED_STUDY, path, [run.hypotheses for run in runs],
                  [int(directory.name[5:]) for directory in finished], runs)


def _test_set(systems: list[System], config_options: Sequence[str], reference_file: str | None) -> TestSet:
    runs = [run for system in systems for run in system.runs]
    names_data = any(option.startswith(_DATA_OPTIONS) for option in config_options)
    if runs and not names_data:  # options given beside runs only change how they are scored
        options = run_config(runs[0].directory, config_options) if config_options else runs[0].config
    else:
        options = load_checked_config(config_options)
    if reference_file is not None:
        if not Path(reference_file).is_file():
            raise DataError(f"--ref={reference_file} does not exist: give the reference file, one line per example")
        references = [parse_references(line) for line in read_lines(reference_file)]
        return TestSet(references, None, options, f"--ref={reference_file}")
    if names_data or (config_options and not runs):
        split = read_splits(options, ["test"])["test"]
        return TestSet([list(targets) for targets in split.targets], list(split.sources), options,
                       f"the test split of {options.dataset!r} ({options.data_path})")
    if not runs:
        raise TextBoxUserError("output files need references: give --ref=<file> or the dataset (--dataset=<name>, "
                               "--data_path=<dir>), or a run directory among the systems")
    first = runs[0]
    return TestSet([list(targets) for targets in first.test.targets], list(first.test.sources), options,
                   f"the test split of run {first.directory} ({first.config.data_path})")


def _check_fits(system: System, test_set: TestSet) -> None:
    """Comparing systems only means something on the same examples, in the same order."""
    for run in system.runs:
        targets = [list(example) for example in run.test.targets]
        if len(targets) != len(test_set.references):
            raise DataError(f"run {run.directory} was tested on {len(targets)} examples ({run.config.data_path}), "
                            f"but the test set ({test_set.origin}) has {len(test_set.references)}: the systems "
                            f"must share one test set")
        sources = test_set.sources or run.test.sources  # unknown with --ref: only the references are compared
        for index, example in enumerate(zip(run.test.sources, targets, sources, test_set.references)):
            if example[:2] != example[2:]:
                raise DataError(f"run {run.directory} was tested on a different test set: example {index + 1} "
                                f"differs from that of {test_set.origin}")
    if system.kind == FILE and len(system.outputs[0]) != len(test_set.references):
        raise DataError(f"{system.path} has {len(system.outputs[0])} lines but the test set ({test_set.origin}) has "
                        f"{len(test_set.references)} examples: an output file holds one line per test example, in "
                        f"order")
