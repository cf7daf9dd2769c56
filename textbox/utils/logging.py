"""Run logging: the main process writes to the console and to <run_dir>/project.log; others only warn."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

LOGGER_NAME = "textbox"
_FORMAT = "%(asctime)s %(levelname)s %(message)s"


def setup_logging(run_dir: Path | None, is_main_process: bool) -> logging.Logger:
    """Configure and return the framework logger (idempotent: handlers from a previous run are replaced)."""
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(logging.INFO if is_main_process else logging.WARNING)
    logger.propagate = False
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter(_FORMAT, datefmt="%H:%M:%S"))
    logger.addHandler(console)
    if run_dir is not None and is_main_process:
        file_handler = logging.FileHandler(Path(run_dir) / "project.log", encoding="utf-8")
        file_handler.setFormatter(logging.Formatter(_FORMAT))
        logger.addHandler(file_handler)
    return logger


def get_logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)
