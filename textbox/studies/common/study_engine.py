"""Where a study's runs execute: --engine=local (this machine's processes, --workers) or --engine=ray.

Only the options are checked here, before anything starts; nothing imports ray (--help and bad options
stay fast and work without it). textbox/studies/common/ray_study_engine.py holds the Ray code itself.
"""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Any, Mapping

from textbox.config.errors import ConfigError, TextBoxUserError
from textbox.config.launcher import worker_gpu_ids
from textbox.config.schema import Key

RESOURCES = ("cpu", "gpu")
DEFAULT_RESOURCES: dict[str, float] = {"cpu": 1}
ENGINE_OPTIONS = [
    Key("engine", "str", "local", "local: runs in this machine's processes (--workers); ray: each run a Ray trial or "
                                  "task on a local Ray instance or a cluster (pip install -e \".[ray]\").",
        "engine", ("local", "ray")),
    Key("ray_address", "str|None", None, "--engine=ray: the cluster to join, 'auto' or host:port of `ray start "
                                         "--head`; unset: a local Ray instance started for this study.", "engine"),
    Key("trial_resources", "dict|None", None, "--engine=ray: what each run holds, e.g. \"{'cpu': 2, 'gpu': 1}\"; "
                                              "Ray gives the run its GPUs (CUDA_VISIBLE_DEVICES); default "
                                              "{'cpu': 1}.", "engine"),
]


@dataclass(frozen=True)
class StudyEngine:
    name: str  # "local" or "ray"
    address: str | None
    resources: dict[str, float]


def check_study_engine(options: dict[str, Any], run_keys: dict[str, Any]) -> StudyEngine:
    """The engine the options ask for; raise ConfigError naming every option that does not fit it."""
    name, address, resources = options["engine"], options["ray_address"], options["trial_resources"]
    problems = _launcher_problems(os.environ)
    if name == "local":
        try:
            worker_gpu_ids(run_keys.get("gpu_id"), options.get("workers", 1))
        except TextBoxUserError as error:
            problems.append(str(error))
        problems += [f"--{option} is for --engine=ray; add --engine=ray or leave --{option} out"
                     for option, value in (("ray_address", address), ("trial_resources", resources))
                     if value is not None]
    else:
        if importlib.util.find_spec("ray") is None:
            problems.append("--engine=ray needs Ray Tune: pip install -e \".[ray]\" (or pip install \"ray[tune]\")")
        if options.get("workers", 1) != 1:
            problems.append(f"--workers={options['workers']} is for --engine=local; with --engine=ray the runs at "
                            f"once follow --trial_resources and the Ray cluster's size")
        if run_keys.get("gpu_id") is not None:
            problems.append("--gpu_id with --engine=ray: Ray gives each run its GPUs; ask for them with "
                            "--trial_resources=\"{'gpu': 1}\" and leave --gpu_id out")
        if address is not None and not address.strip():
            problems.append("--ray_address is empty: give 'auto' or host:port, or leave it out for a local instance")
        problems += _resource_problems(resources)
    if problems:
        error = ConfigError(problems)
        # started by a launcher, every process finds the same problems: the first prints them
        error.shown_elsewhere = os.environ.get("RANK", "0") not in ("", "0")  # type: ignore[attr-defined]
        raise error
    return StudyEngine(name, address, dict(resources or DEFAULT_RESOURCES))


def _launcher_problems(environ: Mapping[str, str]) -> list[str]:
    """A study started by `accelerate launch` or torchrun: every process would run the whole study into the same
    directory. Its runs are started by the study itself (--workers, --engine=ray)."""
    processes = environ.get("WORLD_SIZE", "1") or "1"
    if processes == "1":
        return []
    return [f"this study was started as {processes} processes (accelerate launch or torchrun): each would run the "
            f"whole study into the same directory; start it with python (run_hyper.py, run_multi_seed.py), and run "
            f"trials side by side with --workers=N or --engine=ray"]


def _resource_problems(resources: dict[str, object] | None) -> list[str]:
    if resources is None:
        return []
    problems = [f"--trial_resources: unknown resource {name!r}; use {' and '.join(map(repr, RESOURCES))}"
                for name in resources if name not in RESOURCES]
    for name, amount in resources.items():
        if name in RESOURCES and (isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0):
            problems.append(f"--trial_resources: {name!r} must be a number of at least 0, got {amount!r}")
    if not problems and not resources.get("cpu", 0) and not resources.get("gpu", 0):
        problems.append(f"--trial_resources={resources} holds nothing; give e.g. {{'cpu': 1}}")
    return problems
