"""Run logging: the console gets what a researcher reads, <run_dir>/project.log gets everything.

- Console lines are written through ``tqdm.write``, so a log line never lands on a progress bar's line.
- Library chatter (python warnings, transformers/peft/accelerate/datasets/torch loggers) goes to project.log only.
- Lines logged before the run directory exists (data, model build) are kept and written to project.log once it
  does (``attach_log_file``).
- Inside a study (``silenced_console``) a run writes nothing to the console: its project.log has it all, and the
  study prints one line per run.
- Only the main process writes project.log; the others put warnings on the console.
"""
from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import re
import sys
from pathlib import Path
from typing import Iterator

LOGGER_NAME = "textbox"
LOG_FILE = "project.log"
# Loggers of the libraries we drive: their warnings (load reports, deprecations, notices) are kept for the log file.
LIBRARY_LOGGERS = ("py.warnings", "transformers", "peft", "accelerate", "datasets", "torch", "huggingface_hub",
                   "tokenizers", "hyperopt", "bitsandbytes")
_FORMAT = "%(asctime)s %(levelname)s %(message)s"
_BUFFER_CAPACITY = 100_000
_console_silenced = False


class _FileOnly(logging.Filter):
    """Drops records logged with ``extra={"file_only": True}`` (e.g. a traceback) from the console."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "file_only", False)


class _ConsoleHandler(logging.StreamHandler):
    """Writes through tqdm so that an active progress bar is cleared first and redrawn after the line."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm

            tqdm.write(self.format(record), file=self.stream)
            self.flush()
        except Exception:  # logging must never raise: the standard fallback prints the problem
            self.handleError(record)


def console_handler() -> logging.Handler:
    """stderr, short timestamps, written around progress bars; skips records marked ``file_only``."""
    console = _ConsoleHandler(sys.stderr)
    console.setFormatter(logging.Formatter(_FORMAT, datefmt="%H:%M:%S"))
    console.addFilter(_FileOnly())
    return console


class _PlainText(logging.Formatter):
    """project.log is read in editors and grepped: the terminal colours some libraries put in their messages
    (transformers' LOAD REPORT title) are left out."""

    _ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

    def format(self, record: logging.LogRecord) -> str:
        return self._ANSI.sub("", super().format(record))


FILE_ONLY = {"file_only": True}  # logger.info(message, extra=FILE_ONLY): for the log file, not the console


def setup_logging(run_dir: Path | None, is_main_process: bool) -> logging.Logger:
    """Console logging, and project.log in ``run_dir`` when given (idempotent: earlier handlers are replaced)."""
    logger = start_logging(is_main_process)
    if run_dir is not None:
        attach_log_file(run_dir)
    return logger


def start_logging(is_main_process: bool) -> logging.Logger:
    """Configure the framework logger before the run directory exists: console now, the file later."""
    logger = logging.getLogger(LOGGER_NAME)
    _remove_handlers(logger)
    logger.setLevel(logging.INFO if is_main_process else logging.WARNING)
    logger.propagate = False
    if not _console_silenced:
        logger.addHandler(console_handler())
    # Until project.log exists its lines wait here (the other processes keep none: they write no file).
    destination: logging.Handler = (logging.handlers.MemoryHandler(_BUFFER_CAPACITY, flushLevel=logging.CRITICAL + 1)
                                    if is_main_process else logging.NullHandler())
    logger.addHandler(destination)
    _route_libraries(destination)
    return logger


def attach_log_file(run_dir: Path) -> Path:
    """Open <run_dir>/project.log, write the lines kept so far into it, and log there from now on."""
    logger = logging.getLogger(LOGGER_NAME)
    path = Path(run_dir) / LOG_FILE
    file_handler = logging.FileHandler(path, encoding="utf-8")
    file_handler.setFormatter(_PlainText(_FORMAT))
    for handler in list(logger.handlers):
        if isinstance(handler, logging.handlers.MemoryHandler):
            handler.setTarget(file_handler)
            handler.flush()
            logger.removeHandler(handler)
            handler.close()
        elif isinstance(handler, (logging.FileHandler, logging.NullHandler)):
            logger.removeHandler(handler)
            handler.close()
    logger.addHandler(file_handler)
    _route_libraries(file_handler)
    return path


def release_log_file() -> None:
    """At the end of a run: close project.log and give python warnings and the libraries' loggers back their
    usual behaviour, so that whatever runs next in this process (a study's next step) does not write there."""
    logging.captureWarnings(False)
    for name in (LOGGER_NAME, *LIBRARY_LOGGERS):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            if isinstance(handler, (logging.FileHandler, logging.handlers.MemoryHandler, logging.NullHandler)):
                logger.removeHandler(handler)
                handler.close()
        if name != LOGGER_NAME:
            logger.propagate = True


def log_file_path() -> Path | None:
    """The project.log the framework logger writes to (None before the run directory exists)."""
    for handler in logging.getLogger(LOGGER_NAME).handlers:
        if isinstance(handler, logging.FileHandler):
            return Path(handler.baseFilename)
    return None


def log_to_file(level: int, message: str) -> None:
    """A line for project.log only (e.g. a traceback: the console gets the one-line message)."""
    logging.getLogger(LOGGER_NAME).log(level, message, extra=FILE_ONLY)


class _FirstOfEachLine(logging.Filter):
    """Keeps the first record of each message of the libraries that log one per call (bitsandbytes' int8 matrix
    product says that it casts its inputs on every forward), so that project.log does not fill with repeats."""

    PER_CALL = ("bitsandbytes",)

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[tuple[str, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self.PER_CALL):
            return True
        key = (record.name, str(record.msg))
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


def _route_libraries(destination: logging.Handler) -> None:
    """Python warnings and the libraries' log records go to ``destination`` (the log file), not the console."""
    if not any(isinstance(existing, _FirstOfEachLine) for existing in destination.filters):
        destination.addFilter(_FirstOfEachLine())
    logging.captureWarnings(True)
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        _remove_handlers(library)  # transformers' own console handler included
        library.addHandler(destination)
        library.propagate = False


def _remove_handlers(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        if isinstance(handler, (logging.FileHandler, logging.handlers.MemoryHandler)):
            handler.close()


@contextlib.contextmanager
def silenced_console() -> Iterator[None]:
    """Runs started inside write nothing to the console (log lines, progress bars, library output): a study
    prints one line per run, and each run's project.log keeps the detail."""
    global _console_silenced
    previous = _console_silenced
    _console_silenced = True
    try:
        with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stderr(sink):
            yield
    finally:
        _console_silenced = previous


def get_logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)
