"""Command-line front end shared by the run_* scripts: help, config errors (exit 2), failures (exit 1).

Under `accelerate launch` every process runs this; an error is printed once: config errors (the same on every
process) by global rank 0, a failure shared between processes by the process that found it.
"""
from __future__ import annotations

import os
import sys
import tempfile
import traceback
from textwrap import fill
from typing import Callable, Mapping

from textbox.checks import load_checked_config
from textbox.config import Config, TextBoxError
from textbox.config.layers import LAYER_ORDER
from textbox.config.schema import describe
from textbox.utils.atomic import WriteFailed
from textbox.utils.pipes import print_out

USAGE = f"""usage: python run_textbox.py [--key=value ...]
       accelerate launch run_textbox.py [--key=value ...]

Values are Python literals, quoted for the shell: --metrics="['bleu','rouge']" --generation_kwargs="{{'num_beams':4}}".
{fill(LAYER_ORDER + " Keys:", width=118, break_long_words=False, break_on_hyphens=False)}"""


def wants_help(argv: list[str]) -> bool:
    return any(arg in ("-h", "--help") for arg in argv)


def report_user_error(error: TextBoxError) -> int:
    if not getattr(error, "shown_elsewhere", False):  # a copy of another process's failure: that one prints it
        print(f"error: {error}", file=sys.stderr)
    return error.exit_code


def is_secondary_process() -> bool:
    """A process of a multi-process launch other than the first of its machine (torchrun and accelerate export
    RANK, LOCAL_RANK and WORLD_SIZE to every process they start): another machine's first process prints too, since
    its files (e.g. a run's config.yaml on a disk of its own) may differ from the main machine's."""
    return (os.environ.get("WORLD_SIZE", "1") not in ("", "1") and os.environ.get("RANK", "0") not in ("", "0")
            and os.environ.get("LOCAL_RANK", os.environ.get("RANK", "0")) not in ("", "0"))


def run_cli(argv: list[str], overrides: Mapping[str, object] | None = None,
            runner: Callable[[Config], object] | None = None) -> int:
    """Parse, validate (every problem at once, before anything is built or written), run."""
    if wants_help(argv):
        return print_out(USAGE + describe())  # quiet when the reader stops early (--help | head -1)
    try:
        config = load_checked_config(argv, overrides)
    except TextBoxError as error:
        error.shown_elsewhere = is_secondary_process()  # type: ignore[attr-defined]  # same on every process
        return report_user_error(error)
    try:
        if runner is None:
            from textbox.pipeline import run as runner
        outcome = runner(config)
    except TextBoxError as error:
        code = report_user_error(error)
        _leave_process_group(error)
        return code
    except WriteFailed as error:  # a cache written before the run directory exists (after, the run's own report)
        if not getattr(error, "shown_elsewhere", False):
            print(f"error: {error.strerror}", file=sys.stderr)
        _leave_process_group(error)
        return 1
    except Exception as error:  # a bug, before the run directory exists (after, the pipeline gives a TextBoxError)
        if not getattr(error, "shown_elsewhere", False):
            print(f"error: unexpected {type(error).__name__}: {error}\n(the traceback is in {_keep_traceback(error)})",
                  file=sys.stderr)
        _leave_process_group(error)
        return 1
    return failed_metrics(outcome)


def _keep_traceback(error: BaseException) -> str:
    """Write the traceback of a failure that came before the run directory (and its project.log) existed to a file
    of its own in the temporary directory, as project.log keeps a later one: the console gets one error: line."""
    text = "".join(traceback.format_exception(error))
    try:
        descriptor, path = tempfile.mkstemp(prefix="textbox-failure-", suffix=".log", text=True)
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
    except OSError:  # nowhere to keep it: the console is the only report there is
        print(text, file=sys.stderr, end="")
        return "the lines above"
    return path


def failed_metrics(outcome: object) -> int:
    """A run that finished with a metric that failed on the test split (results.json's metric_errors): every
    other figure and the outputs are written, but the exit code is 1 so that scripts notice."""
    errors = outcome.get("metric_errors") if isinstance(outcome, Mapping) else None
    if not errors:
        return 0
    if not is_secondary_process():
        where = outcome.get("run_dir") if isinstance(outcome, Mapping) else None
        print(f"error: metric(s) {', '.join(errors)} failed on the test split (results.json's metric_errors says "
              f"why); the other figures and the outputs are in {where}", file=sys.stderr)
    return 1


def _leave_process_group(error: BaseException) -> None:
    """After the message is out: a failure every process raised waits for them all, then each leaves."""
    from textbox.pipeline.processes import is_shared, leave_process_group

    leave_process_group(meet_first=is_shared(error))
