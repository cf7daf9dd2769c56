"""Write files and directories all at once, so that a killed process never leaves half of one behind."""
from __future__ import annotations

import errno
import os
import re
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # not POSIX: a staging copy is never known to be abandoned, none is removed
    fcntl = None  # type: ignore[assignment]

# Less free space than this on the disk where a write just failed: the disk is full (a library that writes through
# C++ streams, torch.save's, reports a full disk as a RuntimeError without an errno).
_FULL_BELOW = 2**20
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class WriteFailed(OSError):
    """A write that failed (a failing disk, a permission, ...); its partial files are removed, the previous version
    kept. The message names what was written, where, why, and says what to do."""

    def __init__(self, directory: Path, what: str, cause: OSError | None = None, staging: Path | None = None):
        directory = Path(directory).absolute()
        reason = (cause.strerror or str(cause)) if cause is not None else "it failed"
        source = cause.filename if cause is not None else None
        if source and (staging is None or not str(source).startswith(str(staging))):  # another file: named
            reason = f"{reason}: {source}"
        super().__init__(cause.errno if cause is not None and cause.errno else errno.EIO,
                         f"could not write {what} in {directory} ({reason}): check that disk and its permissions, "
                         f"then run again; the previous version, if any, is intact")


class NoSpaceLeft(WriteFailed):
    """A write that failed because its disk is full; its partial files are removed, the previous version kept. The
    message names the directory and says what to do."""

    def __init__(self, directory: Path, what: str):
        directory = Path(directory).absolute()
        free = _free_bytes(directory)
        OSError.__init__(self, errno.ENOSPC, f"no space left on the disk of {directory} while writing {what} "
                                             f"({free / 2**20:,.1f} MiB free once its partial copy was removed): free "
                                             f"some space or choose another directory; the previous version, if any, "
                                             f"is intact")


@contextmanager
def staged(staging: Path, what: str) -> Iterator[None]:
    """Run a block that writes ``staging``; if it fails, ``staging`` is removed, and a full disk is a NoSpaceLeft
    naming ``what`` and the directory (the free space is read before the removal gives some back), another OSError a
    WriteFailed naming them (not the removed partial file)."""
    try:
        yield
    except Exception as error:
        full = is_disk_full(error, staging.parent)
        _remove(staging)
        if isinstance(error, WriteFailed):
            raise
        if full:
            raise NoSpaceLeft(staging.parent, what) from error
        if isinstance(error, OSError):
            raise WriteFailed(staging.parent, what, error, staging) from error
        raise


def is_disk_full(error: BaseException, directory: Path) -> bool:
    """Whether ``error`` (or what caused it) says the disk is full, or the disk of ``directory`` is nearly so."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in _NO_SPACE:
            return True
        seen = seen.__cause__ or seen.__context__
    return _free_bytes(directory) < _FULL_BELOW


def _free_bytes(directory: Path) -> int:
    try:
        return shutil.disk_usage(directory).free
    except OSError:
        return _FULL_BELOW  # unknown: not counted as full


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
    remove_abandoned_staging(final)
    replacing = final.exists()
    staging = _sibling(final, "partial")
    staging.mkdir()
    writing = _hold(staging)  # while this process writes it, no other takes it for abandoned
    try:
        with staged(staging, final.name):
            yield staging
            if replacing:
                swap_in(staging, final)
            else:
                publish_new(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if writing is not None:
            os.close(writing)


def remove_abandoned_staging(final: Path) -> list[str]:
    """The staging directories of ``final`` (``.<name>.partial-<pid>-<id>``) a killed process left, removed, so that
    a cache or run directory does not keep them for ever (each is as large as the entry): those whose process is
    gone from this machine and whose lock nobody holds (a writer on another machine sharing the disk holds it; the
    kernel drops a killed process's). Their names; none where locks are unavailable."""
    removed: list[str] = []
    if fcntl is None or not final.parent.is_dir():
        return removed
    for entry in final.parent.iterdir():
        match = _STAGING.match(entry.name)
        if (match is None or match["name"] != final.name or not match["pid"] or _alive(int(match["pid"]))
                or not entry.is_dir() or entry.is_symlink()):
            continue
        descriptor = _hold(entry, exclusive=True)
        if descriptor is None:  # being written (or no locks here): kept
            continue
        try:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
        finally:
            os.close(descriptor)
    return removed


def _hold(directory: Path, exclusive: bool = False) -> int | None:
    """An open descriptor of ``directory`` holding its lock (shared: a writer's; exclusive: a remover's, taken
    without waiting); None when another process holds it, or locks are unavailable."""
    if fcntl is None:
        return None
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, (fcntl.LOCK_EX | fcntl.LOCK_NB) if exclusive else fcntl.LOCK_SH)
    except OSError:  # held by another process (BlockingIOError), or a file system without locks
        os.close(descriptor)
        return None
    return descriptor


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
        with staged(staging, path.name):
            staging.write_text(text, encoding="utf-8")
            os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


_STAGING = re.compile(r"^\.(?P<name>.+)\.(?:partial-(?P<pid>\d+)-[0-9a-f]{8}|(?P<tmp>tmp)|(?P<old>old))$")


def remove_stale_staging(directory: Path) -> list[str]:
    """The staging entries a killed process left in ``directory``, removed: a half-written copy (``.<name>.partial-
    <pid>-<id>`` of a process no longer alive, ``.<name>.tmp``) and a previous version whose replacement is in place
    (``.<name>.old``; without the replacement it is put back, as restore_interrupted does). Their names."""
    removed = []
    for entry in sorted(Path(directory).iterdir()) if Path(directory).is_dir() else []:
        match = _STAGING.match(entry.name)
        if match is None or (match["pid"] and _alive(int(match["pid"]))):
            continue
        if match["old"] and not (entry.parent / match["name"]).exists():
            restore_interrupted(entry.parent / match["name"])
            continue
        _remove(entry)
        removed.append(entry.name)
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sibling(path: Path, tag: str) -> Path:
    """A hidden, unique name next to ``path`` (created with the usual permissions, unlike tempfile's)."""
    return path.with_name(f".{path.name}.{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
