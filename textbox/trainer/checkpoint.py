"""Checkpoints, always written atomically so that a kill at any moment leaves a loadable previous version.

checkpoint_best/ and checkpoint-<step>/: save_pretrained model + tokenizer (for testing and sharing); with
efficient_methods only the adapter (or BitFit's biases) and the base model's path (textbox.model.efficient).
checkpoint_last/: accelerate's full state (model, optimiser, scheduler, every RNG) + train_state.json,
everything an exact resume needs.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from accelerate import Accelerator

from textbox.model.efficient import save_model_files
from textbox.trainer.state import TrainState
from textbox.utils.atomic import atomic_directory, restore_interrupted, swap_in

TRAIN_STATE_FILE = "train_state.json"
LAST = "checkpoint_last"
BEST = "checkpoint_best"


def save_model(accelerator: Accelerator, model: Any, tokenizer: Any, path: Path) -> None:
    """save_pretrained model + tokenizer from the main process, atomically."""
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        with atomic_directory(path) as tmp:
            save_model_files(accelerator.unwrap_model(model), tmp)  # only the trained parameters when efficient
            tokenizer.save_pretrained(tmp)
    accelerator.wait_for_everyone()


def save_resume_state(accelerator: Accelerator, run_dir: Path, state: TrainState) -> None:
    """accelerate's save_state into a shared temporary directory (every process writes its own RNG file),
    then the same two-rename swap as atomic_directory, by the main process."""
    final = Path(run_dir) / LAST
    tmp = Path(run_dir) / f".{LAST}.tmp"
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        (tmp / TRAIN_STATE_FILE).write_text(state.to_json(), encoding="utf-8")
        swap_in(tmp, final)
    accelerator.wait_for_everyone()


def find_resume_dir(run_dir: Path) -> Path | None:
    """checkpoint_last, restored first if a kill landed between the two renames of its last save."""
    final = Path(run_dir) / LAST
    restore_interrupted(final)
    return final if (final / TRAIN_STATE_FILE).is_file() else None


def load_resume_state(accelerator: Accelerator, path: Path) -> TrainState:
    accelerator.load_state(str(path))
    return TrainState.from_file(Path(path) / TRAIN_STATE_FILE)


def prune_step_checkpoints(run_dir: Path, keep: int) -> None:
    """Keep the newest ``keep`` checkpoint-<step> directories."""
    found = sorted(Path(run_dir).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    for old in found[:-keep] if keep else found:
        shutil.rmtree(old)
