"""The Python entry point: ``textbox.run({...})`` does what ``python run_textbox.py --key=value ...`` does and
returns the results (results.json's content) instead of an exit code.

Why a wrapper of its own: a script's caller wants the figures back and an exception it can catch, not a process
exit; the keys are checked exactly as the command line's are (the mapping is one more command-line layer).
"""
from __future__ import annotations

import multiprocessing
from typing import Mapping

from textbox.checks import load_checked_config
from textbox.config.errors import TextBoxUserError


def run(config: Mapping[str, object] | None = None, /, **keys: object) -> dict[str, object]:
    """Train, validate and test as run_textbox.py does with ``config`` and ``keys`` (keys win) as command-line
    settings, e.g. ``textbox.run({"model": "transformer", "dataset": "samsum"}, epochs=3)``: Python values of the
    keys' types (``epochs=3``, ``metrics=["bleu"]``), ``config_files`` and ``user_dir`` included.

    Returns the results dict written to the run's results.json (its ``run_dir`` says where). Raises
    textbox.config.ConfigError (every configuration problem at once) or another TextBoxError (a missing file, a
    diverged run; its ``exit_code`` is the script's) instead of exiting; a metric that failed on the test split is
    in the result's ``metric_errors``. One run per call; under ``accelerate launch`` every process calls it."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise TextBoxUserError(_UNGUARDED)
    checked = load_checked_config([], {**(config or {}), **keys})
    from textbox.pipeline import run as run_pipeline  # torch and transformers: only once the keys are known good

    return run_pipeline(checked)


# A spawned worker (tokenisation: textbox.data.parallel) imports the caller's script again; without the guard it
# would run it (the run again, up to its own workers, which multiprocessing then refuses). multiprocessing marks the
# process as "_inheriting" while it imports the script, as its own check of the guard reads it.
_UNGUARDED = ("textbox.run was called while a worker process imported your script: call it under "
              "`if __name__ == \"__main__\":` (workers are spawned and import the script that started them)")
