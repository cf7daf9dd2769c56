"""The directory of a search or seed study, and its log.

saved_dir/filename when --filename is given, else saved_dir/<kind>-<timestamp>; every run of the study
writes its own sub-directory there. The study logs to the console and <dir>/study.log through its own
logger: each in-process run re-points the run logger at that run's directory.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from textbox.config import Config, TextBoxUserError
from textbox.utils.logging import console_handler

_FORMAT = "%(asctime)s %(levelname)s %(message)s"


def study_directory(config: Config, kind: str) -> Path:
    return Path(config.saved_dir) / (config.filename or f"{kind}-{time.strftime('%Y-%b-%d_%H-%M-%S')}")


def create_study_directory(directory: Path, hint: str) -> None:
    """Make an empty directory; one that already holds files is an error (``hint`` says what to do)."""
    if directory.exists() and any(directory.iterdir()):
        raise TextBoxUserError(f"{directory} already holds files; {hint}")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise TextBoxUserError(f"cannot create {directory} ({error.strerror}); check --saved_dir") from None


def study_logger(directory: Path, kind: str) -> logging.Logger:
    """A logger of its own (not under 'textbox'), to the console and ``directory``/study.log."""
    logger = logging.getLogger(f"textbox_{kind}")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(logging.INFO)
    logger.propagate = False
    console = console_handler()  # lines logged with extra=FILE_ONLY stay in study.log
    log_file = logging.FileHandler(directory / "study.log", encoding="utf-8")
    log_file.setFormatter(logging.Formatter(_FORMAT))
    logger.addHandler(console)
    logger.addHandler(log_file)
    return logger
