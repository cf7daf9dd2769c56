"""What every step of one run shares: its config, its Accelerator, its run directory and its logger (one typed
value handed down instead of four positional ones)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textbox.config import Config

if TYPE_CHECKING:  # accelerate imports torch: the type alone is needed here
    from accelerate import Accelerator


@dataclass(frozen=True)
class RunContext:
    config: Config
    accelerator: Accelerator
    run_dir: Path
    logger: logging.Logger

    @property
    def is_main_process(self) -> bool:
        return self.accelerator.is_main_process
