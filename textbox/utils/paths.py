"""Local paths, one answer for every layer: is a ``--model_path``-like value a local directory or a Hugging Face Hub
id, and which directory will hold a path that does not exist yet.

Hub ids are ``name`` or ``owner/name``; a value that starts with ``.``, ``/`` or ``~`` or has more than one ``/``
can only have meant a local directory, so when it does not exist that is the user's mistake to report (and not a
hub download to try). The test is on the text alone; existence is checked after ``~`` is expanded, as loading does.
"""
from __future__ import annotations

from os import PathLike
from pathlib import Path


def looks_like_a_path(value: str | PathLike[str]) -> bool:
    """Whether ``value`` can only mean a local path (see the module docstring); a Path object always does."""
    if isinstance(value, PathLike):
        return True
    return value.startswith((".", "/", "~")) or value.count("/") > 1


def missing_local_path(value: str | PathLike[str]) -> bool:
    """A value that can only be a local path and does not exist (with ``~`` expanded)."""
    return looks_like_a_path(value) and not Path(value).expanduser().exists()


def existing_ancestor(path: Path) -> Path:
    """``path`` itself when it exists, else its nearest existing ancestor: the directory whose disk and
    permissions a directory not made yet (a run directory) will have."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
