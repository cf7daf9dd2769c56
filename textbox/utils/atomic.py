"""Write files and directories all at once, so that a killed process never leaves half of one behind."""
from __future__ import annotations

import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def atomic_directory(final: Path) -> Iterator[Path]:
    """Yield an empty staging directory next to ``final``; when the block succeeds it becomes ``final``.

    A ``final`` that was there when the block began (an older best checkpoint, a damaged cache entry) is first
    renamed aside and deleted only once the new one is in place, so at every instant a complete version exists under
    ``final`` or ``aside(final)`` (restore_interrupted puts it back). A ``final`` that another process published
    while the block ran (study workers or ranks building one cache entry) is kept, never replaced under a process
    that may be reading it: both hold the same data.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    replacing = final.exists()
    staging = _sibling(final, "partial")
    staging.mkdir()
    try:
        yield staging
        if replacing:
            swap_in(staging, final)
        else:
            publish_new(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def publish_new(staging: Path, final: Path) -> None:
    """``staging`` becomes ``final`` in one rename, unless another process published ``final`` first: theirs is
    kept (a rename onto a directory that holds files fails)."""
    try:
        os.rename(staging, final)
    except OSError:
        if not final.is_dir():
            raise


def swap_in(staging: Path, final: Path) -> None:
    """Replace ``final`` by the complete directory ``staging`` with two renames (see atomic_directory)."""
    old = aside(final)
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    try:
        os.rename(staging, final)
    except OSError:
        if not final.is_dir():  # a rank that lost the race keeps the winner's identical copy
            raise
    shutil.rmtree(old, ignore_errors=True)


def aside(path: Path) -> Path:
    """Where the previous version of ``path`` waits while the new one is renamed into place."""
    return Path(path).with_name(f".{Path(path).name}.old")


def restore_interrupted(path: Path) -> None:
    """If a kill landed between the two renames of swap_in, put the previous version back."""
    path = Path(path)
    if not path.exists() and aside(path).is_dir():
        os.replace(aside(path), path)


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) in one rename: readers see the old file or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = _sibling(path, "partial")
    try:
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def _sibling(path: Path, tag: str) -> Path:
    """A hidden, unique name next to ``path`` (created with the usual permissions, unlike tempfile's)."""
    return path.with_name(f".{path.name}.{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
