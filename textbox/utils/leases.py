"""Entries of a cache directory that several processes share (study workers, two runs, the ranks of one run): each
process holds a lease on the entries it uses, and only entries nobody holds are ever removed.

A lease is a shared ``flock`` on ``<entry>.lock`` beside the entry. A process takes it before it looks for the
entry (or converts it) and keeps it while it may still open the entry's files; removing an entry takes the
exclusive lock without waiting, so an entry another process holds is skipped, never removed. The kernel drops a
process's locks when it exits, however it exits: a killed run leaves no lease behind, and its entries are removed
by the next cleaner. A removed entry's lock file is unlinked while the exclusive lock is held; a process that
opened the old file in the meantime sees that the path names another file (or none) once it has its lock, and
takes the lock again on the file now there.

Where locks are unavailable (no ``fcntl``; a file system without locking), nothing is removed: a cache that grows
is better than a run whose files vanish under it.
"""
from __future__ import annotations

import os
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

try:
    import fcntl
except ImportError:  # not POSIX: no leases, nothing removed
    fcntl = None  # type: ignore[assignment]

LOCK_SUFFIX = ".lock"


@dataclass
class Lease:
    """A held shared lock on ``path`` (``descriptor`` None: locks are unavailable here, nothing is ever removed)."""

    path: Path
    descriptor: int | None

    def release(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)  # closing the descriptor drops the lock
            self.descriptor = None


def hold(lock_path: Path) -> Lease:
    """A shared lease on ``lock_path`` (created when missing); waits only while a cleaner removes that entry."""
    descriptor = _locked(lock_path, exclusive=False)
    return Lease(lock_path, descriptor if descriptor is not None and descriptor >= 0 else None)


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Held alone while the block runs (``lock_path`` created when missing): for a process that checks an entry,
    then builds or repairs it, so that no other process finds it half-built and takes it for damaged. Where locks are
    unavailable the block runs unlocked."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = _locked(lock_path, exclusive=True)
    try:
        yield
    finally:
        if descriptor is not None and descriptor >= 0:
            os.close(descriptor)


def remove_unheld(directory: Path, key_of: Callable[[str], str | None], keep: set[str]) -> list[str]:
    """Remove every entry of ``directory`` (all the names ``key_of`` maps to one key: the entry, its lock file, a
    conversion in progress, a copy set aside) that no process holds a lease on, except the keys in ``keep``.
    Returns the keys removed."""
    if fcntl is None or not directory.is_dir():
        return []
    names: dict[str, list[str]] = {}
    for name in os.listdir(directory):
        key = key_of(name)
        if key is not None and key not in keep:
            names.setdefault(key, []).append(name)
    removed = []
    for key, found in sorted(names.items()):
        lock_path = directory / f"{key}{LOCK_SUFFIX}"
        descriptor = _locked(lock_path, exclusive=True, wait=False)
        if descriptor is None or descriptor < 0:  # held by a process that uses it (or locks unavailable)
            continue
        try:
            for name in found:
                if name != lock_path.name:
                    _remove(directory / name)
            lock_path.unlink(missing_ok=True)  # under the lock: see the module docstring
        finally:
            os.close(descriptor)
        removed.append(key)
    return removed


def key_in_name(pattern: str) -> Callable[[str], str | None]:
    """A ``key_of`` for remove_unheld: the first match of ``pattern`` in an entry's name (None: not an entry)."""
    compiled = re.compile(pattern)

    def key_of(name: str) -> str | None:
        found = compiled.search(name)
        return found.group(0) if found else None
    return key_of


def _locked(path: Path, exclusive: bool, wait: bool = True) -> int | None:
    """An open descriptor of ``path`` holding the lock; None: another process holds it (only when not waiting);
    -1: locks are unavailable on this system or file system."""
    if fcntl is None:
        return -1
    operation = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB)
    while True:
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            return -1  # e.g. a read-only cache: it cannot be written, so nothing of it is removed either
        try:
            fcntl.flock(descriptor, operation)
        except BlockingIOError:
            os.close(descriptor)
            return None
        except OSError:  # ENOLCK, EOPNOTSUPP: a file system without locks
            os.close(descriptor)
            return -1
        if _same_file(descriptor, path):
            return descriptor
        os.close(descriptor)  # a cleaner unlinked the file between open and lock: lock the one there now


def _same_file(descriptor: int, path: Path) -> bool:
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (opened.st_dev, opened.st_ino) == (now.st_dev, now.st_ino)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
