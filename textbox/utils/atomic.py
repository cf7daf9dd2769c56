"""Write files and directories all at once, so that a killed process never leaves half of one behind."""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def atomic_directory(final: Path) -> Iterator[Path]:
    """Yield an empty staging directory next to ``final``; when the block succeeds it becomes ``final``.

    An existing ``final`` is replaced (a newer best checkpoint). The staging directory is removed if the
    block raises. If another process publishes ``final`` at the same moment (several ranks building the
    same cache), the copy that got there first is kept: both hold the same data.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    try:
        yield staging
        if final.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
            os.replace(final, retired)
            shutil.rmtree(retired)
        _publish(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish(staging: Path, final: Path) -> None:
    try:
        os.rename(staging, final)
    except OSError:
        if not final.is_dir():  # a rank that lost the race keeps the winner's identical copy
            raise


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) in one rename: readers see the old file or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{path.name}.partial-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(staging, path)
    except BaseException:
        os.unlink(staging)
        raise
