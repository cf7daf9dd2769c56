"""Command-line front end shared by the run_* scripts: help, config errors (exit 2), failures (exit 1)."""
from __future__ import annotations

import sys
from typing import Any, Callable, Mapping

from textbox.config import TextBoxError, load_config

USAGE = """usage: python run_textbox.py [--key=value ...]
       accelerate launch run_textbox.py [--key=value ...]

Values are Python literals, quoted for the shell: --metrics="['bleu','rouge']" --generation_kwargs="{'num_beams':4}".
Layers, later wins: configs/overall.yaml < configs/model/<model>.yaml < configs/dataset/<dataset>.yaml
< --config_files=a.yaml,b.yaml < command line. Keys:"""


def wants_help(argv: list[str]) -> bool:
    return any(arg in ("-h", "--help") for arg in argv)


def report_user_error(error: TextBoxError) -> int:
    print(f"error: {error}", file=sys.stderr)
    return error.exit_code


def run_cli(argv: list[str], overrides: Mapping[str, Any] | None = None,
            runner: Callable[..., Any] | None = None) -> int:
    """Parse, validate (every problem at once, before anything is built or written), run."""
    if wants_help(argv):
        from textbox.config.schema import describe

        print(USAGE + describe())
        return 0
    try:
        config = load_config(argv, overrides)
        if runner is None:
            from textbox.pipeline import run as runner
        runner(config)
    except TextBoxError as error:
        return report_user_error(error)
    return 0
