"""Checkpoint averaging: the element-wise mean of the weights of the last N validations' checkpoint-<step>.

Why: the weights of the last updates scatter around a point that generalises better than any one of them; their
mean is a free ensemble that needs one model at test time (Vaswani et al. 2017 averaged the last 5-20 checkpoints).
The checkpoints are read back from disk, so a resumed run averages exactly what an uninterrupted one does.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from textbox.model.adapter_files import is_efficient_checkpoint
from textbox.trainer.state import AveragedRecord

if TYPE_CHECKING:
    from accelerate import Accelerator

    from textbox.trainer.hooks import Validation, ValidationHook

STEP_PREFIX = "checkpoint-"


def latest_step_checkpoints(run_dir: Path, count: int, up_to_step: int) -> list[Path]:
    """The ``count`` newest checkpoint-<step> directories of the run (oldest first), none after ``up_to_step``."""
    found = []
    for path in Path(run_dir).glob(f"{STEP_PREFIX}*"):
        suffix = path.name[len(STEP_PREFIX):]
        if path.is_dir() and suffix.isdigit() and int(suffix) <= up_to_step:
            found.append((int(suffix), path))
    return [path for _, path in sorted(found)[-count:]]


def checkpoint_step(path: Path) -> int:
    return int(Path(path).name[len(STEP_PREFIX):])


def average_saved_models(paths: list[Path], like: torch.nn.Module) -> torch.nn.Module:
    """The checkpoints at ``paths`` (written by save_model for the model ``like``) loaded one by one, and a model
    holding the mean of their floating-point weights (summed in float64, so the order does not matter); integer
    buffers are the last checkpoint's. Adapters and BitFit checkpoints load onto their base as for testing, and
    only what they trained is averaged: their base is the same in every checkpoint, and a quantised base's state
    (bitsandbytes' packed weights and their absmax/quant_map) cannot be loaded back as a state dict."""
    from textbox.model.loading import load_saved_model

    if not paths:
        raise ValueError("no checkpoint to average")
    trained_only = is_efficient_checkpoint(paths[0])
    sums: dict[str, torch.Tensor] = {}
    model = None
    for path in paths:
        model = load_saved_model(path, like)
        entries = ({name: parameter.detach() for name, parameter in model.named_parameters()
                    if parameter.requires_grad} if trained_only else model.state_dict())
        for name, tensor in entries.items():
            if tensor.is_floating_point():
                sums[name] = sums[name] + tensor.double() if name in sums else tensor.double()
    assert model is not None
    if trained_only:
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                if name in sums:
                    parameter.copy_((sums[name] / len(paths)).to(parameter.dtype))
        return model
    state = model.state_dict()
    averaged = {name: (sums[name] / len(paths)).to(tensor.dtype) if name in sums else tensor
                for name, tensor in state.items()}
    model.load_state_dict(averaged)
    return model


def validate_average(count: int, run_dir: Path, step: int, accelerator: Accelerator, model: torch.nn.Module,
                     hook: ValidationHook, logger: logging.Logger
                     ) -> tuple[AveragedRecord, torch.nn.Module | None, Validation | None]:
    """The average of the last ``count`` checkpoints, validated through ``hook`` and recorded (log, metrics.jsonl
    as split valid_average): (TrainState.averaged's record, the averaged model, its Validation); the last two are
    None when fewer than two checkpoints were saved."""
    from textbox.trainer.records import record

    paths = latest_step_checkpoints(run_dir, count, step)
    outcome: AveragedRecord = {"at_step": step, "steps": [checkpoint_step(path) for path in paths], "chosen": False}
    if len(paths) < 2:
        logger.warning(f"average_checkpoints={count}: {len(paths)} checkpoint(s) to average (one is saved per "
                       f"validation): nothing averaged")
        return outcome, None, None
    try:
        averaged = average_saved_models(paths, accelerator.unwrap_model(model)).to(accelerator.device)
        validation = hook.validate(averaged)
    except Exception as error:  # noqa: BLE001 - the average is an extra: its failure costs it alone, not the run
        text = " ".join(str(error).split())  # one line (torch's load_state_dict puts the keys on the next ones)
        text = text if len(text) <= 300 else text[:297] + "..."
        message = f"{type(error).__name__}: {text}" if text else type(error).__name__
        outcome["error"] = message
        logger.error(f"average_checkpoints={count}: averaging the checkpoints of steps {outcome['steps']} failed "
                     f"({message}); the run goes on with the single checkpoints (results.json's averaged.error)")
        return outcome, None, None
    outcome["valid"] = dict(validation.figures)
    logger.info(f"average of the checkpoints of steps {outcome['steps']}: "
                + " ".join(f"{name} {value:.4f}" for name, value in validation.figures.items()))
    record(accelerator, run_dir, step, {"step": step, "checkpoints": len(paths), **validation.figures},
           "valid_average")
    return outcome, averaged, validation
