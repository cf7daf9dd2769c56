"""The command line: ``--key=value`` pairs whose values are Python literals (ast.literal_eval, never eval).

Why a module of its own: the study commands (run_hyper, run_multi_seed) and the evaluate command parse their own
options with the same rules, and a value the shell mangled gets the same quoting hint everywhere.
"""
from __future__ import annotations

import ast
import re
from typing import Iterable, Mapping

from textbox.config.schema import SCHEMA, ConfigValue


def parse_value(text: str) -> ConfigValue:
    """A command-line value as a Python literal; anything that is not a literal stays a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def parse_argv(argv: Iterable[str]) -> tuple[dict[str, ConfigValue], list[str]]:
    """Parse ``--key=value`` / ``--key value`` pairs (``--config_files a.yaml b.yaml`` takes every file named after it).
    Returns the values and the malformed arguments."""
    values: dict[str, ConfigValue] = {}
    problems: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or arg == "--":
            problems.append(f"argument {arg!r} is not of the form --key=value")
            i += 1
            continue
        body = arg[2:]
        if "=" in body:
            key, raw = body.split("=", 1)
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            key, raw = body, args[i + 1]
            i += 1
        else:
            key, raw = body, "True"  # a bare flag: --do_train means --do_train=True
        name = key.replace("-", "_")
        values[name] = _as_text_if_a_name(name, parse_value(raw), raw)
        i += 1
        if name in _SEVERAL_VALUES:  # --config_files a.yaml b.yaml (TextBox 2.0's form): words up to the next --key
            extra = []
            while i < len(args) and not args[i].startswith("--"):
                extra.append(args[i])
                i += 1
            if extra:
                values[name] = [*_as_list(values[name]), *extra]
    return values, problems


def _as_text_if_a_name(name: str, value: ConfigValue, raw: str) -> ConfigValue:
    """A number typed for a key that takes text alone (str or str|None: --filename=42, --hub_subset=2019) is that
    text, as typed ("42", "1e3"): a name that happens to be digits, not a type error."""
    key = SCHEMA.get(name)
    if key is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    kinds = set(key.kinds)
    return raw if str in kinds and not kinds & {int, float, bool} else value


# Keys that take several words after them: --config_files a.yaml b.yaml.
_SEVERAL_VALUES = ("config_files",)


def _as_list(value: object) -> list[object]:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [part.strip() for part in str(value).split(",") if part.strip()]


def quoting_hint(name: str, value: object, sources: Mapping[str, str]) -> str:
    """When the shell ate the quotes of a list or dict (--metrics=[bleu,rouge]), say how to quote it."""
    if sources.get(name) != "command line" or not isinstance(value, str):
        return ""
    kinds = set(SCHEMA[name].kinds)
    text = value.strip()
    if not kinds & {list, dict} or not (text[:1] in "[{(" or (dict in kinds and ":" in text)):
        return ""
    body = text if text[:1] in "[{(" else "{" + text + "}"
    quoted = re.sub(r"(?<![\w'\"])([A-Za-z_][\w.\-]*)(?![\w'\"])",
                    lambda word: word.group(1) if word.group(1) in ("True", "False", "None") else f"'{word.group(1)}'",
                    body)
    if text[:1] not in "[{(":
        return (f"; the shell split or unquoted it: quote the whole value, e.g. --{name}=\"{quoted}\" "
                f"(an unquoted {{a,b}} is expanded by bash into separate arguments)")
    return f"; the shell removed its quotes: write --{name}=\"{quoted}\" (double quotes around the value)"
