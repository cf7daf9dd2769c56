"""The run in the experiment tracker (--tracker): its project and name, its config as hyper-parameters, and every
split's figures, so that runs can be compared there. train/* and valid/* go out as they come (textbox.trainer.records);
test/* and best/* (the best validation's step and figures) at the end, with TensorBoard's HPARAMS table written then:
the config beside the final figures (accelerate writes TensorBoard's hyper-parameters without any metric).

Nothing heavy is imported at the top: textbox.pipeline.processes reads TRACKER_PACKAGES before torch starts.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping
from urllib.parse import urlparse

from textbox.config import Config

if TYPE_CHECKING:
    from accelerate import Accelerator

    from textbox.trainer.context import RunContext

DEFAULT_PROJECT = "textbox"
PROJECT_ENV = {"wandb": "WANDB_PROJECT", "mlflow": "MLFLOW_EXPERIMENT_NAME"}  # the tracker's own default
TRACKER_PACKAGES = {"wandb": "wandb", "mlflow": "mlflow-skinny"}  # what pip installs (setup.py's extra "trackers")
MLFLOW_STORE = "mlruns"  # MLflow's file store in saved_dir when MLFLOW_TRACKING_URI is not set: the runs side by side


@dataclass(frozen=True)
class TrackerRun:
    """Where a run goes in its tracker."""

    tracker: str
    project: str
    name: str


def tracker_run(config: Config, run_dir: Path) -> TrackerRun:
    """--tracker_project, else the tracker's environment variable (WANDB_PROJECT, MLFLOW_EXPERIMENT_NAME), else
    'textbox'; --tracker_run_name, else the run directory's name."""
    variable = PROJECT_ENV.get(config.tracker)
    project = config.tracker_project or (os.environ.get(variable) if variable else None) or DEFAULT_PROJECT
    return TrackerRun(config.tracker, project, config.tracker_run_name or run_dir.name)


def tracker_hparams(config: Config, names: TrackerRun) -> dict[str, int | float | str | bool]:
    """The config as the trackers take hyper-parameters (scalars: lists, dicts and None become strings), with the
    project and run name that were used."""
    values = {**dict(config.items()), "tracker_project": names.project, "tracker_run_name": names.name}
    return {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in values.items()}


def start_trackers(run: RunContext) -> None:
    """Start the configured tracker for ``run`` (its files in the run directory: TensorBoard's events, wandb's run
    unless WANDB_DIR says otherwise; MLflow's store in saved_dir/mlruns unless MLFLOW_TRACKING_URI says otherwise)
    and hand it the config as hyper-parameters (TensorBoard's wait for the final figures: finish_trackers)."""
    config = run.config
    if config.tracker == "none":
        unused = [f"--{key}" for key in ("tracker_project", "tracker_run_name") if config[key] is not None]
        if unused:  # a yaml's names beside --tracker=none on the command line: said, not refused
            run.logger.info(f"{' and '.join(unused)} unused: --tracker=none logs to no tracker")
        return
    accelerator = run.accelerator
    names = tracker_run(config, run.run_dir)
    accelerator.project_configuration.set_directories(str(run.run_dir))
    accelerator.project_configuration.logging_dir = str(run.run_dir)  # set_directories keeps an older one
    where = f"{run.run_dir / names.project}" if names.tracker == "tensorboard" else ""
    if names.tracker == "mlflow" and accelerator.is_main_process:
        where = _use_mlflow_store(config)
    accelerator.init_trackers(names.project, init_kwargs=_init_kwargs(names, run.run_dir))
    hparams = tracker_hparams(config, names)
    for tracker in accelerator.trackers:
        if tracker.name != "tensorboard":
            tracker.store_init_configuration(hparams)
    run.logger.info(f"tracker {names.tracker}: project {names.project!r}, run {names.name!r}"
                    + (f" ({where})" if where else ""))


def _init_kwargs(names: TrackerRun, run_dir: Path) -> dict[str, dict[str, object]]:
    """Per tracker, what accelerate hands its constructor: the run's name (TensorBoard's folder is the project's,
    in the run directory: accelerate's logging_dir)."""
    if names.tracker == "wandb":
        location = {} if os.environ.get("WANDB_DIR") else {"dir": str(run_dir)}
        return {"wandb": {"name": names.name, **location}}
    if names.tracker == "mlflow":
        return {"mlflow": {"run_name": names.name}}
    return {}


def _use_mlflow_store(config: Config) -> str:
    """MLflow's tracking URI: MLFLOW_TRACKING_URI, else a file store shared by the runs of saved_dir. MLflow 3
    refuses file stores unless MLFLOW_ALLOW_FILE_STORE is set; its default (sqlite) needs the full mlflow package,
    while mlflow-skinny writes file stores."""
    import mlflow

    uri = os.environ.get("MLFLOW_TRACKING_URI") or (Path(config.saved_dir).resolve() / MLFLOW_STORE).as_uri()
    if urlparse(uri).scheme in ("", "file"):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow.set_tracking_uri(uri)
    return uri


def final_figures(results: Mapping[str, object]) -> dict[str, float]:
    """What the run ends with, as tracker tags: test/<figure>, best/step and best/valid_<figure> (the validation
    that chose checkpoint_best)."""
    figures: dict[str, float] = {}
    test, best = results.get("test"), results.get("valid")
    if isinstance(test, dict):
        figures.update({f"test/{name}": value for name, value in test.items() if _is_number(value)})
    best_step = results.get("best_step")
    if isinstance(best_step, int):
        figures["best/step"] = best_step
    if isinstance(best, dict):
        figures.update({f"best/valid_{name}": value for name, value in best.items() if _is_number(value)})
    return figures


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finish_trackers(run: RunContext, results: Mapping[str, object]) -> None:
    """The final figures to the tracker, at the run's last step; TensorBoard's HPARAMS table gets the config with
    those figures as its metrics (the figures themselves are the scalars just logged)."""
    if run.config.tracker == "none":
        return
    figures = final_figures(results)
    steps = results.get("steps")
    run.accelerator.log(figures, step=steps if isinstance(steps, int) else 0)
    if run.config.tracker == "tensorboard" and run.accelerator.is_main_process:
        _write_tensorboard_hparams(run.accelerator, tracker_hparams(run.config, tracker_run(run.config, run.run_dir)),
                                   figures)


def _write_tensorboard_hparams(accelerator: Accelerator, hparams: Mapping[str, int | float | str | bool],
                               figures: Mapping[str, float]) -> None:
    """The hparams plugin's three summaries (experiment, session start, session end) in the run's own event file:
    one session per run, named like its scalars, its metrics read from the test/* and best/* scalars."""
    from torch.utils.tensorboard.summary import hparams as hparams_summaries

    writer = accelerator.get_tracker("tensorboard", unwrap=True)
    for summary in hparams_summaries(dict(hparams), dict(figures)):
        writer.file_writer.add_summary(summary)
    writer.flush()
