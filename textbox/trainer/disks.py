"""Run directories across machines: which process writes the checkpoints each process reads back.

On one machine, or on machines that share a file system, the main process writes every checkpoint and all
processes read the same files. Machines that do not share a disk each keep their own copy of the run's
checkpoints (checkpoint_best for testing, checkpoint_last for resuming), written by the machine's local main
process; the run's records (project.log, metrics.jsonl, results.json, generation.txt) stay the main machine's
alone. Which case holds is found out once per run (disk_layout), before any file of the run is written: the main
process puts a marker file with a random token where the run directory will be, every process looks for it.
"""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textbox.config import TextBoxUserError
from textbox.utils.atomic import atomic_directory, write_text_atomic
from textbox.utils.paths import existing_ancestor

if TYPE_CHECKING:  # accelerate imports torch: the type alone is needed here
    from accelerate import Accelerator

_MARKER = ".textbox-disk-check-{token}"


@dataclass(frozen=True)
class DiskLayout:
    """``shared``: every process sees the main process's disk. ``first``/``count``: the global indices of the
    processes that write into this process's copy of the run directory (all of them when shared)."""

    shared: bool
    first: int
    count: int


_layout: DiskLayout | None = None


def disk_layout(accelerator: Accelerator, run_dir: Path) -> DiskLayout:
    """Find out (collectively, once per run) whether the processes share the main process's disk at ``run_dir``.
    Machines that partly share it are refused: two machines would then write the same checkpoint files."""
    global _layout
    from accelerate.utils import broadcast_object_list, gather_object

    anchor, token = None, uuid.uuid4().hex
    if accelerator.is_main_process:
        anchor = existing_ancestor(Path(run_dir))  # as each process reaches it (from its own working directory)
        (anchor / _MARKER.format(token=token)).write_text(token, encoding="utf-8")
    try:
        anchor, token = broadcast_object_list([anchor, token])
        assert anchor is not None  # the main process's, now on every process
        marker = Path(anchor) / _MARKER.format(token=token)
        sees = marker.is_file() and marker.read_text(encoding="utf-8") == token
        seen = gather_object([sees]) if accelerator.num_processes > 1 else [sees]
    finally:
        accelerator.wait_for_everyone()
        if accelerator.is_main_process and anchor is not None:
            (Path(anchor) / _MARKER.format(token=token)).unlink(missing_ok=True)
    shared = all(seen)
    if not shared and any(seen[index] for index in range(1, len(seen)) if not _same_node(index, accelerator)):
        error = TextBoxUserError(f"some machines see the main machine's disk at {anchor} and others do not; run "
                                 f"with --saved_dir on a file system that all machines share, or on none of them")
        error.shared = True  # type: ignore[attr-defined]  # every process raises it (all saw the same answers)
        error.shown_elsewhere = not accelerator.is_main_process  # type: ignore[attr-defined]  # printed once
        raise error
    if shared:
        _layout = DiskLayout(True, 0, accelerator.num_processes)
    else:
        local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        _layout = DiskLayout(False, accelerator.process_index - accelerator.local_process_index, local)
        # accelerate's save_state then writes model, optimiser and schedule on every machine's local main process
        accelerator.project_configuration.save_on_each_node = True
    return _layout


def writes_checkpoints(accelerator: Accelerator) -> bool:
    """True on the process that writes this machine's checkpoints: the main process, or, on machines that do not
    share its disk, each machine's local main process."""
    if accelerator.is_main_process:
        return True
    return _layout is not None and not _layout.shared and accelerator.is_local_main_process


def copy_to_other_disks(accelerator: Accelerator, path: Path) -> None:
    """Collective: the main process's ``path`` sent byte for byte to the local main process of every machine that
    does not share its disk, and put in place there atomically (nothing to do on a shared disk). ``path``: a saved
    model's directory (transformers' save_pretrained writes on global rank 0 only), or a text file (the run's
    config.yaml, which --resume reads on every machine)."""
    if _layout is None or _layout.shared:
        return
    from accelerate.utils import broadcast_object_list

    path = Path(path)
    files = None
    if accelerator.is_main_process:
        files = path.read_text(encoding="utf-8") if path.is_file() else {
            str(file.relative_to(path)): file.read_bytes() for file in sorted(path.rglob("*")) if file.is_file()}
    files = broadcast_object_list([files])[0]
    if not writes_checkpoints(accelerator) or accelerator.is_main_process:
        return
    if isinstance(files, str):  # a text file
        write_text_atomic(path, files)
        return
    with atomic_directory(path) as staging:
        for name, content in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(content)


def processes_on_this_disk(accelerator: Accelerator) -> range:
    """The global indices of the processes whose random states are saved into this process's checkpoint_last."""
    if _layout is None or _layout.shared:
        return range(accelerator.num_processes)
    return range(_layout.first, _layout.first + _layout.count)


def _same_node(index: int, accelerator: Accelerator) -> bool:
    """Whether global process ``index`` runs on the main process's machine (the launchers number the processes
    machine by machine, each with LOCAL_WORLD_SIZE of them)."""
    return index < int(os.environ.get("LOCAL_WORLD_SIZE", str(accelerator.num_processes)))
