"""The Python entry point: ``textbox.run({...})`` does what ``python run_textbox.py --key=value ...`` does and
returns the results (results.json's content) instead of an exit code.

Why a wrapper of its own: a script's caller wants the figures back and an exception it can catch, not a process
exit; the keys are checked exactly as the command line's are (the mapping is one more command-line layer).
"""
from __future__ import annotations

from typing import Mapping

from textbox.checks import load_checked_config


def run(config: Mapping[str, object] | None = None, /, **keys: object) -> dict[str, object]:
    """Train, validate and test as run_textbox.py does with ``config`` and ``keys`` (keys win) as command-line
    settings, e.g. ``textbox.run({"model": "transformer", "dataset": "samsum"}, epochs=3)``: Python values of the
    keys' types (``epochs=3``, ``metrics=["bleu"]``), ``config_files`` and ``user_dir`` included.

    Returns the results dict written to the run's results.json (its ``run_dir`` says where). Raises
    textbox.config.ConfigError (every configuration problem at once) or another TextBoxError (a missing file, a
    diverged run; its ``exit_code`` is the script's) instead of exiting; a metric that failed on the test split is
    in the result's ``metric_errors``. One run per call; under ``accelerate launch`` every process calls it."""
    checked = load_checked_config([], {**(config or {}), **keys})
    from textbox.pipeline import run as run_pipeline  # torch and transformers: only once the keys are known good

    return run_pipeline(checked)
