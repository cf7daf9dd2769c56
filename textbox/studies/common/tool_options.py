"""The options of run_hyper.py / run_multi_seed.py themselves, told apart from the run keys they pass on.

``--workers=2 --learning_rate=1e-3``: workers is the tool's, learning_rate goes to every run. Options are
declared and type-checked like config keys (schema.Key), so a typo reads the same as on run_textbox.py.
"""
from __future__ import annotations

from typing import Any, Iterable

from textbox.config.errors import ConfigError
from textbox.config.argv import parse_argv
from textbox.config.schema import Key


def split_options(argv: Iterable[str], options: list[Key]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the tool's options, the run keys); raise ConfigError naming every malformed or missing option."""
    values, problems = parse_argv(argv)
    chosen: dict[str, Any] = {}
    for option in options:
        value = values.pop(option.name, option.default)
        if value is None and "None" not in option.type.split("|"):
            problems.append(f"--{option.name} is required: {option.doc}")
            continue
        error = option.type_error(value)
        if error:
            problems.append(f"--{option.name} {error}")
        elif option.type.startswith("int") and value is not None and value < 1:  # integer options count things
            problems.append(f"--{option.name} must be at least 1, got {value}")
        else:
            chosen[option.name] = value.lower() if option.choices and isinstance(value, str) else value
    if problems:
        raise ConfigError(problems)
    return chosen, values


def usage(synopsis: str, options: list[Key]) -> str:
    """--help: the synopsis, each option, and where the run keys are listed."""
    lines = [synopsis, "", "Options:"]
    for option in options:
        choices = f" ({'|'.join(option.choices)})" if option.choices else ""
        default = "required" if option.default is None and "None" not in option.type else repr(option.default)
        lines.append(f"  --{option.name}: {option.type}{choices} = {default}\n      {option.doc}")
    lines += ["", "Every other --key=value is a run key given to each run; python run_textbox.py --help lists them."]
    return "\n".join(lines)
