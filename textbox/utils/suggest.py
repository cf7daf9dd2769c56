"""How a message names a key or a misspelled name: shared by every layer that reports a user's mistake.

Standard library only (utils is the lowest layer: it imports nothing from the rest of textbox).
"""
from __future__ import annotations

import difflib
from typing import Iterable, Mapping


def suggest(name: str, options: Iterable[str], aliases: Mapping[str, str] | None = None) -> str:
    """A ' did you mean ...?' hint for a misspelled name, or an empty string.

    ``aliases`` maps another tool's name for the same thing (lowercase) to ours, with an optional note after a
    space: {'lr': 'learning_rate', 'output_dir': 'saved_dir (the run directory is saved_dir/filename)'}; a
    name found there is answered from it, not by spelling (``--output_dir`` is not ``output_file``)."""
    alias = (aliases or {}).get(name.lower())
    if alias is not None:
        target, _, note = alias.partition(" ")
        return f"; did you mean {target!r}{' ' + note if note else ''}?"
    matches = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
    return f"; did you mean {matches[0]!r}?" if matches else ""


def where(name: str, sources: Mapping[str, str]) -> str:
    """Key ``name`` as the user set it: ``--name`` (command line), ``name (default)`` or ``name (from <file>)``."""
    origin = sources.get(name, "default")
    if origin == "command line":
        return f"--{name}"
    if origin == "default":
        return f"{name} (default)"
    return f"{name} (from {origin})"
