"""The run directory: named once for every process, checked writable and roomy enough before training starts,
and its config.yaml written; the same config summed up for the log (the keys that differ from their defaults).
(``--model_path=<run dir>`` continuing that run is resolved while the config loads:
textbox/config/run_config.py.)"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
import yaml
from accelerate import Accelerator
from accelerate.utils import broadcast_object_list

from textbox.config import Config
from textbox.config.schema import DEFAULTS
from textbox.config.run_config import RUN_CONFIG as CONFIG_FILE
from textbox.config.run_config import (FAILED_MARKER, LAST_CHECKPOINT, RUN_IDENTITY, failed_before_first_checkpoint,
                                       nothing_to_continue)
from textbox.pipeline.processes import raise_on_every_process
from textbox.trainer.checkpoint import keeps_last, step_checkpoints_kept
from textbox.utils import yaml_numbers
from textbox.utils.atomic import aside, write_text_atomic
from textbox.utils.paths import existing_ancestor


def write_run_config(config: Config, run_dir: Path) -> None:
    """config.yaml of the run; a resumed run leaves its file untouched when nothing in it changed (a bare
    --resume=True), and otherwise rewrites it whole and atomically (e.g. with more epochs)."""
    path = run_dir / CONFIG_FILE
    text = config.to_yaml()
    if config.resume and path.is_file() and _settings(path.read_text(encoding="utf-8")) == _settings(text):
        return  # the same run (saved_dir may be spelled another way: relative, absolute)
    write_text_atomic(path, text)


def _settings(text: str) -> dict[str, object] | None:
    try:
        loaded = yaml_numbers.load(text)
    except yaml.YAMLError:
        return None
    return {k: v for k, v in loaded.items() if k not in RUN_IDENTITY} if isinstance(loaded, dict) else None


def config_summary(config: Config) -> str:
    """The keys that differ from their defaults and where each was set: what makes this run this run."""
    changed = [f"  {key} = {value!r}  ({_origin(config, key)})" for key, value in config.items()
               if value != DEFAULTS[key]]
    return "\n".join(["config (keys that differ from the defaults, and where they were set):", *changed])


def _origin(config: Config, key: str) -> str:
    """Where a key was set; a dict merged from several layers names the layer of each of its entries."""
    by_origin: dict[str, list[str]] = {}
    for entry, origin in config.entry_sources(key).items():
        by_origin.setdefault(origin, []).append(str(entry))
    if len(by_origin) < 2:
        return config.source_of(key)
    return "; ".join(f"{', '.join(entries)}: {origin}" for origin, entries in by_origin.items())


def plan_run_dir(config: Config, accelerator: Accelerator) -> Path:
    """saved/<model>-<dataset>-<timestamp> (one name for all processes), or saved_dir/filename: checked (free to
    use, or when resuming found; writable) without creating anything, so that a problem shows before the data
    and the model are loaded."""
    name = config.filename or f"{config.model}-{config.dataset}-{time.strftime('%Y-%b-%d_%H-%M-%S')}"
    name = broadcast_object_list([name])[0]
    run_dir = Path(config.saved_dir) / name
    problem = None
    if accelerator.is_main_process:
        problem = _occupied(run_dir, config) or _unwritable_ancestor(run_dir, config.saved_dir)
    raise_on_every_process(problem, accelerator)
    return run_dir


def make_run_dir(run_dir: Path, config: Config, accelerator: Accelerator) -> None:
    """Create ``run_dir`` (a failed run's files left in it are removed first) and check it is writable."""
    problem = None
    if accelerator.is_main_process:
        problem = _occupied(run_dir, config)
        if problem is None and not config.resume and failed_before_first_checkpoint(run_dir):
            _clear(run_dir)
        problem = problem or _unwritable(run_dir, config.saved_dir)
    raise_on_every_process(problem, accelerator)


def mark_failed(run_dir: Path, message: str) -> None:
    """Say in the run directory that this run failed, and why (a retry with the same name may then reuse it,
    unless it has a checkpoint_last to continue)."""
    if run_dir.is_dir():
        write_text_atomic(run_dir / FAILED_MARKER, message.rstrip("\n") + "\n")


def clear_failed_mark(run_dir: Path) -> None:
    (run_dir / FAILED_MARKER).unlink(missing_ok=True)


def _occupied(run_dir: Path, config: Config) -> str | None:
    if config.resume:
        if not run_dir.is_dir():
            return f"--resume=True: run directory {run_dir} does not exist (check --saved_dir/--filename)"
        if failed_before_first_checkpoint(run_dir):
            return nothing_to_continue(run_dir)
        last = run_dir / LAST_CHECKPOINT
        if config.do_train and not last.is_dir() and not aside(last).is_dir():  # killed before its first save
            return (f"--resume=True: the run in {run_dir} has no {LAST_CHECKPOINT} (it stopped before its first "
                    f"one was saved): there is nothing to continue; start it again without --resume "
                    f"(another --filename, or remove {run_dir})")
        return None
    if not run_dir.exists() or not any(run_dir.iterdir()) or failed_before_first_checkpoint(run_dir):
        return None
    if (run_dir / FAILED_MARKER).is_file():  # failed after its first checkpoint: continue it, or start elsewhere
        return (f"run directory {run_dir} holds a failed run with a checkpoint_last (see its {FAILED_MARKER} and "
                f"project.log); continue it with --resume=True, or choose another --filename")
    return (f"run directory {run_dir} already holds a run; choose another --filename "
            f"(or leave it unset for a timestamped name)")


def _clear(run_dir: Path) -> None:
    """Remove what a failed run left (its config.yaml, project.log, event files, ...)."""
    for entry in run_dir.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _unwritable_ancestor(run_dir: Path, saved_dir: str) -> str | None:
    """The directory that will hold ``run_dir`` (its nearest existing ancestor) must be writable."""
    existing = existing_ancestor(run_dir)
    if existing.is_dir() and os.access(existing, os.W_OK | os.X_OK):
        return None
    return (f"--saved_dir={saved_dir}: cannot write the run directory {run_dir} ({existing} is not a writable "
            f"directory); choose a writable --saved_dir")


def _unwritable(run_dir: Path, saved_dir: str) -> str | None:
    """Create ``run_dir`` and write a probe file in it: a read-only or full disk shows here, not hours later."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=run_dir):
            pass
    except OSError as error:
        return (f"--saved_dir={saved_dir}: cannot write the run directory {run_dir} ({error.strerror}); "
                f"choose a writable --saved_dir")
    return None


def peak_checkpoint_bytes(parameter_bytes: int, max_save: int, validations: int, save_optimizer: bool = True) -> int:
    """Disk a run's checkpoints may need at once: checkpoint_best and checkpoint_last exist twice while a new
    version replaces the old; checkpoint_last holds the weights and, unless --save_optimizer=False, up to two
    optimiser moments (Adam) of the same size, and is not written with --max_save=0 or 1 (checkpoint_best is, even
    with 0: the test pass reads it); each of the run's ``validations`` writes a checkpoint-<step>, of which
    max_save - 2 are kept (one more while the oldest is pruned), every one with max_save=-1."""
    best = parameter_bytes
    last = (3 if save_optimizer else 1) * parameter_bytes if keeps_last(max_save) else 0
    kept = step_checkpoints_kept(max_save)
    written = validations if kept is None else min(kept, validations) + (validations > kept > 0)
    return 2 * best + 2 * last + written * parameter_bytes


def check_free_space(run_dir: Path, needed: int, accelerator: Accelerator) -> None:
    """Stop before training when the disk that holds (or will hold) the run directory cannot hold the
    checkpoints."""
    problem = None
    if accelerator.is_main_process:
        holder = existing_ancestor(run_dir)
        free = shutil.disk_usage(holder).free
        if free < needed:
            problem = (f"{holder} has {_size(free)} free but this run's checkpoints need about {_size(needed)}; "
                       f"free some space or choose another --saved_dir (a smaller --max_save needs less)")
    raise_on_every_process(problem, accelerator)


def _size(count: int) -> str:
    return f"{count / 2**20:,.1f} MiB"
