"""TrainState: the progress of a run, kept apart from the (frozen) Config and saved with every checkpoint."""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypedDict


class AveragedRecord(TypedDict, total=False):
    """--average_checkpoints' record (TrainState.averaged, results.json's ``averaged``)."""

    at_step: int  # the step at which the last checkpoints were averaged
    steps: list[int]  # the steps of the checkpoints averaged
    valid: dict[str, float]  # the average's validation figures
    chosen: bool  # whether it became checkpoint_best
    error: str  # why averaging (or validating the average) failed: the run went on without it


@dataclass
class TrainState:
    """Everything about where training stands that a resumed run needs to continue exactly."""

    # Accumulation windows consumed, i.e. optimiser steps attempted: max_steps, valid_steps and logging_steps
    # count these (as transformers' global_step does). The learning-rate schedule counts only the updates
    # really made: a step the fp16 gradient scaler skipped, or whose every batch was NaN/inf, is in
    # skipped_steps and does not advance the schedule.
    step: int = 0
    epoch: int = 0  # epochs completed
    batches_in_epoch: int = 0  # batches of the current epoch already consumed (for mid-epoch resume)
    validations: int = 0
    validated_step: int | None = None  # step of the latest validation
    best_score: float | None = None
    best_step: int | None = None
    best_valid: dict[str, float] = field(default_factory=dict)
    stale_validations: int = 0  # validations since the last improvement (early stopping)
    skipped_steps: int = 0  # steps with no optimiser update (see step)
    averaged: AveragedRecord = field(default_factory=AveragedRecord)  # --average_checkpoints ({}: none yet)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_file(cls, path: Path) -> "TrainState":
        data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(**data)


def improves(score: float, best: float | None) -> bool:
    """Whether a validation score becomes the new best. A NaN/inf score never does (a comparison with NaN is
    always false, so a NaN best would block every later one); a best that is not finite (a state saved before
    this rule) is beaten by any finite score."""
    if not math.isfinite(score):
        return False
    return best is None or not math.isfinite(best) or score > best
