"""What every step of one run shares (RunContext: its config, its Accelerator, its run directory and its logger),
and what a Trainer is given (TrainerContext: the run's, and the model it trains with its tokenizer, collator and
efficient method): typed values handed down instead of positional ones. Defined in the trainer layer so that the
Trainer takes them and the pipeline above hands them down."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textbox.config import Config
from textbox.model.built_model import EfficientRecord

if TYPE_CHECKING:  # accelerate and torch are heavy: the types alone are needed here
    import torch
    from accelerate import Accelerator
    from transformers import PreTrainedTokenizerBase

    from textbox.trainer.loaders import Collator


@dataclass(frozen=True)
class RunContext:
    config: Config
    accelerator: Accelerator
    run_dir: Path
    logger: logging.Logger

    @property
    def is_main_process(self) -> bool:
        return self.accelerator.is_main_process


@dataclass(frozen=True)
class TrainerContext:
    """What a Trainer trains and where: the run, the model, its tokenizer (saved beside it in checkpoints), the
    collator that batches the train split, and the model's efficient method (BuiltModel.efficient: what
    checkpoints hold)."""

    run: RunContext
    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerBase
    collator: Collator
    efficient: EfficientRecord | None = None
