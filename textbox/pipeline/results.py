"""What a run leaves when it ends: results.json (and the summary table in the log) when it finished; project.log's
account and a FAILED mark when it failed after its directory existed."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from textbox.utils.atomic import write_text_atomic


def write_results(results: dict[str, Any], run_dir: Path, started: float, accelerator: Any, logger: Any,
                  examples: str = "") -> None:
    """results.json, then the closing log: the figures' table, the test ``examples`` (textbox.evaluator.examples)
    and where the outputs are."""
    from textbox.pipeline.run_dir import clear_failed_mark

    results["run_dir"] = str(run_dir)
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["device"] = str(accelerator.device)
    results["num_processes"] = accelerator.num_processes
    if accelerator.is_main_process:
        clear_failed_mark(run_dir)  # a resumed run that failed once and now finished
        from textbox.utils.json_numbers import finite_or_null  # NaN/inf figures: null, so the file is strict JSON

        text = json.dumps(finite_or_null(results), indent=2, allow_nan=False)
        write_text_atomic(run_dir / "results.json", text + "\n")
        log_summary(logger, results, examples)


def failed(error: BaseException, run_dir: Path, accelerator: Any, logger: Any) -> BaseException:
    """Record a failure in the run directory (project.log, FAILED) and say what the console should show: the
    error itself when it explains itself, else one line with the log's path (the traceback is in the log)."""
    import logging
    import traceback

    from textbox.config import RunInterrupted, TextBoxError
    from textbox.pipeline.run_dir import FAILED_MARKER, mark_failed
    from textbox.utils.logging import log_file_path, log_to_file

    if isinstance(error, RunInterrupted):  # checkpoint_last is saved: the run continues with --resume
        log_to_file(logging.WARNING, str(error))
        return error
    if isinstance(error, TextBoxError):
        message, shown = str(error), error
    elif isinstance(error, Exception):
        message = f"{type(error).__name__}: {error}"
        log = log_file_path() or run_dir / "project.log"
        shown = TextBoxError(f"unexpected {message}\n(the traceback is in {log})")
    else:  # KeyboardInterrupt, SystemExit: not a failure of the run's own making, but the run did not finish
        message, shown = f"stopped by {type(error).__name__} before the run finished", error
    log_to_file(logging.ERROR, f"the run failed: {message}")
    if not isinstance(error, TextBoxError):
        log_to_file(logging.ERROR, "".join(traceback.format_exception(error)).rstrip())
    if accelerator.is_main_process:
        mark_failed(run_dir, message)
        log_to_file(logging.ERROR, f"marked failed ({run_dir / FAILED_MARKER}); a retry with the same --filename "
                                   f"replaces this run unless it has a checkpoint_last to --resume from")
    return shown


def log_summary(logger: Any, results: dict[str, Any], examples: str = "") -> None:
    rows = [(split, name, value) for split in ("valid", "test") for name, value in results.get(split, {}).items()]
    if not rows:
        return
    lines = ["", f"{'split':<6} {'figure':<14} {'value':>10}"]
    lines += [f"{split:<6} {name:<14} {value:>10.4f}" for split, name, value in rows]
    if examples:
        lines += ["", examples, ""]
    logger.info("\n".join(lines) + f"\nfinished in {results['seconds']} s; outputs in {results['run_dir']}")
