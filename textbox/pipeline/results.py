"""What a run leaves when it ends: results.json (and the summary in the log: the figures' table and a few test
examples) when it finished; project.log's account and a FAILED mark when it failed after its directory existed."""
from __future__ import annotations

import json
import logging
import signal
import sys
import time
import traceback
from typing import Mapping

from textbox.config import RunInterrupted, TextBoxError
from textbox.config.errors import EvaluationInterrupted
from textbox.data.split import Split
from textbox.pipeline.run_dir import FAILED_MARKER, clear_failed_mark, mark_failed
from textbox.trainer.checkpoint import LAST
from textbox.trainer.context import RunContext
from textbox.trainer.records import finite_or_null
from textbox.utils.atomic import NoSpaceLeft, WriteFailed, write_text_atomic
from textbox.utils.logging import log_file_path, log_to_file
from textbox.utils.versions import software_versions


def write_results(run: RunContext, results: dict[str, object], started: float, examples: str = "") -> None:
    """results.json, then the closing log: the figures' table, the test ``examples`` (format_examples) and where
    the outputs are."""
    results["run_dir"] = str(run.run_dir)
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["device"] = str(run.accelerator.device)
    results["num_processes"] = run.accelerator.num_processes
    results["versions"] = software_versions()  # python, torch, transformers, ..., this code's git revision
    if run.is_main_process:
        clear_failed_mark(run.run_dir)  # a resumed run that failed once and now finished
        text = json.dumps(finite_or_null(results), indent=2, allow_nan=False)  # NaN/inf: null, strict JSON
        write_text_atomic(run.run_dir / "results.json", text + "\n")
        log_summary(run.logger, results, examples)


def failed(run: RunContext, error: BaseException) -> BaseException:
    """Record a failure in the run directory (project.log, FAILED) and say what the console should show: the
    error itself when it explains itself, else one line with the log's path (the traceback is in the log)."""
    run_dir = run.run_dir
    shown: BaseException
    if isinstance(error, RunInterrupted):  # checkpoint_last is saved: the run continues with --resume
        log_to_file(logging.WARNING, str(error))
        if isinstance(error, EvaluationInterrupted) and run.is_main_process:  # no results.json: say how to finish
            mark_failed(run_dir, str(error))
        return error
    if isinstance(error, TextBoxError):
        message, shown = str(error), error
    elif isinstance(error, WriteFailed):  # a full disk or another: its partial copy is removed (room for FAILED)
        fixed = "there is room" if isinstance(error, NoSpaceLeft) else "it can be written"
        resume = f"; once {fixed}, --resume=True continues from checkpoint_last" if (run_dir / LAST).is_dir() else ""
        message = f"{error.strerror}{resume}"
        shown = TextBoxError(message)
    elif isinstance(error, Exception):
        message = f"{type(error).__name__}: {error}"
        log = log_file_path() or _keep_traceback(run, error)
        shown = TextBoxError(f"unexpected {message}\n(the traceback is in {log})")
    else:  # KeyboardInterrupt, SystemExit: not a failure of the run's own making, but the run did not finish
        message, shown = f"stopped by {type(error).__name__} before the run finished", error
    log_to_file(logging.ERROR, f"the run failed: {message}")
    if not isinstance(error, (TextBoxError, WriteFailed)):
        log_to_file(logging.ERROR, "".join(traceback.format_exception(error)).rstrip())
    if run.is_main_process:
        mark_failed(run_dir, message)
        log_to_file(logging.ERROR, f"marked failed ({run_dir / FAILED_MARKER}); a retry with the same --filename "
                                   f"replaces this run unless it has a checkpoint_last to --resume from")
    return shown


def _keep_traceback(run: RunContext, error: BaseException) -> str:
    """project.log is the main process's: another process keeps its traceback in a file of its own beside it
    (``failure-rank<N>.log``), named in its error line."""
    path = run.run_dir / f"failure-rank{run.accelerator.process_index}.log"
    text = "".join(traceback.format_exception(error))
    try:
        write_text_atomic(path, text)
    except OSError:  # nowhere to keep it (WriteFailed too): the console is the only report there is
        print(text, file=sys.stderr, end="")
        return "the lines above"
    return str(path)


def evaluation_interrupted(run: RunContext, signal_number: int) -> EvaluationInterrupted:
    """The error a SIGINT/SIGTERM during the test pass (or --input_file generation) becomes: one line saying what
    was interrupted, what is kept, and the command that finishes the run."""
    config, run_dir = run.config, run.run_dir
    name = signal.Signals(signal_number).name
    what = f"generation for --input_file={config.input_file}" if config.input_file else "the test pass"
    if config.do_train and (run_dir / LAST).is_dir():  # training finished: --resume goes straight to the test
        finish = (f"training had finished and {run_dir} keeps its checkpoints; finish it with --resume=True "
                  f"--saved_dir={config.saved_dir} --filename={run_dir.name}")
    else:
        finish = f"run the same command again with --saved_dir={config.saved_dir} --filename={run_dir.name}"
    return EvaluationInterrupted(f"{what} was interrupted by {name}; {finish}", 128 + signal_number)


def log_summary(logger: logging.Logger, results: Mapping[str, object], examples: str = "") -> None:
    splits = [(split, results.get(split)) for split in ("valid", "test")]
    rows = [(split, name, value) for split, figures in splits if isinstance(figures, dict)
            for name, value in figures.items()]
    if not rows:
        return
    lines = ["", f"{'split':<6} {'figure':<14} {'value':>10}"]
    lines += [f"{split:<6} {name:<14} {value:>10.4f}" for split, name, value in rows]
    details = results.get("metric_details")
    lines += scoring_lines(details if isinstance(details, dict) else {})
    if examples:
        lines += ["", examples, ""]
    logger.info("\n".join(lines) + f"\nfinished in {results['seconds']} s; outputs in {results['run_dir']}")


def scoring_lines(details: Mapping[str, Mapping[str, object]]) -> list[str]:
    """One line per metric saying how its figures were computed (results.json's metric_details in words)."""
    lines = []
    for metric, fields in details.items():
        settings = "; ".join(f"{key} {value}" for key, value in fields.items() if key not in ("package", "version"))
        lines.append(f"scored: {metric} by {fields.get('package')} {fields.get('version')}: {settings}")
    return lines


# --- test examples ----------------------------------------------------------------------------------------------------
# A few test examples, each output beside its reference and its (shortened) source: what a researcher reads first
# when a run ends, before opening generation.txt.
#
# The examples are spread evenly over the test split, so every run on the same split shows the same examples
# whatever its seed or model: two runs' closing logs compare side by side.
SOURCE_CHARS = 120  # a source is shown up to this many characters: enough to recognise the input


def example_indices(total: int, count: int) -> list[int]:
    """``count`` indices spread evenly over ``total`` examples, from the middle of each of ``count`` equal
    stretches; every index when there are no more than ``count``."""
    if count <= 0 or total <= 0:
        return []
    if count >= total:
        return list(range(total))
    return [(2 * k + 1) * total // (2 * count) for k in range(count)]


def shorten(text: str, limit: int = SOURCE_CHARS) -> str:
    """``text`` on one line (runs of whitespace become one space), cut to ``limit`` characters with '...'."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 3].rstrip() + "..."


def format_examples(split: Split, outputs: list[str], count: int) -> str:
    """``count`` examples of ``split`` with their outputs (one per example, in dataset order), as lines for the
    log; an empty string when ``count`` is 0 or there is nothing to show."""
    indices = example_indices(min(len(split), len(outputs)), count)
    if not indices:
        return ""
    lines = [f"{len(indices)} of {len(split)} {split.name} examples (--show_examples sets how many, 0 none):"]
    for index in indices:
        references = split.targets[index]
        others = len(references) - 1
        more = f"  (+{others} more reference{'s' * (others > 1)})" if others else ""
        lines += [f"  [{index}] source:    {shorten(split.sources[index])}",
                  f"  {' ' * (len(str(index)) + 2)} reference: {shorten(references[0], 10 * SOURCE_CHARS)}{more}",
                  f"  {' ' * (len(str(index)) + 2)} output:    {shorten(outputs[index], 10 * SOURCE_CHARS)}"]
    return "\n".join(lines)
