"""Applying TextBox 2.0's names (textbox/config/textbox_names.py) to a layer of the configuration, and the table.

Why a module of its own: the table is data; reading a layer through it (notes, refusals, checks that wait for the
merged configuration) is one small job the loader calls. Standard library only.
"""
from __future__ import annotations

from typing import Any, Mapping

from textbox.config.textbox_names import TEXTBOX_NAMES, TEXTBOX_VALUES, Check


def translate_layer(origin: str, layer: Mapping[str, Any], ours: Mapping[str, Any], problems: list[str],
                    notes: list[str], checks: list[tuple[str, Check]]) -> dict[str, Any]:
    """``layer`` with TextBox 2.0's names replaced by ours (``ours``: our schema, whose names stay as they are).

    A TextBox name that also sets one of our keys given in the same layer with another value is a problem (the
    layer would say two things); dict entries merge, ours winning only when equal."""
    translated = {key: value for key, value in layer.items() if key in ours or key not in TEXTBOX_NAMES}
    for key, aliases in TEXTBOX_VALUES.items():
        value = translated.get(key)
        spelled = value.lower() if isinstance(value, str) else value
        if key in translated and isinstance(spelled, str) and spelled in aliases:
            translated[key] = aliases[spelled]
            where = f"--{key}" if origin == "command line" else f"{key!r} in {origin}"
            notes.append(f"TextBox 2.0's {where}={value!r} -> {key}={aliases[spelled]!r}")
    for key, value in layer.items():
        if key in ours or key not in TEXTBOX_NAMES:
            continue
        outcome = TEXTBOX_NAMES[key].translate(value)
        named = f"--{key}" if origin == "command line" else f"{key!r} in {origin}"
        if outcome.problem:
            problems.append(f"TextBox 2.0's {named}: {outcome.problem}")
            continue
        for our, our_value in outcome.sets.items():
            if our in translated and translated[our] != our_value:
                problems.append(f"TextBox 2.0's {named}={value!r} means {our}={our_value!r}, but {origin} also "
                                f"gives {our}={translated[our]!r}: keep one")
            translated[our] = our_value
        for our, entries in outcome.entries.items():
            current = translated.get(our, {})
            current = current if isinstance(current, dict) else {}
            for entry, entry_value in entries.items():
                if entry in current and current[entry] != entry_value:
                    problems.append(f"TextBox 2.0's {named}={value!r} means {our}['{entry}']={entry_value!r}, but "
                                    f"{origin} also gives {our}['{entry}']={current[entry]!r}: keep one")
            translated[our] = {**entries, **current}
        if outcome.check is not None:
            checks.append((named, outcome.check))
        notes.append(f"TextBox 2.0's {named}={value!r} -> {outcome.note}")
    return translated


def check_translations(checks: list[tuple[str, Check]], values: Mapping[str, Any]) -> list[str]:
    """The refusals of translated options that depend on the merged configuration."""
    found = []
    for named, check in checks:
        problem = check(values)
        if problem:
            found.append(f"TextBox 2.0's {named}: {problem}")
    return found


def render_table() -> str:
    """docs/textbox_names.md's key table."""
    lines = ["| TextBox 2.0 key | here |", "|---|---|"]
    lines += [f"| `{name}` | {entry.became} |" for name, entry in sorted(TEXTBOX_NAMES.items())]
    lines += [f"| `{key}: {value}` | `{key}: {ours!r}` |" for key, aliases in TEXTBOX_VALUES.items()
              for value, ours in aliases.items()]
    return "\n".join(lines)
