"""Cache entries that are checked when read: a record of every file's size and checksum, written last.

An entry (a directory) is written in full, then ``write_record`` flushes its files and records each one's size and
XXH3-128 checksum in a record file of the entry's own, written last; ``damage_of`` then tells whether the entry still
holds those bytes. Bytes overwritten in place at the same size (a bad sector, a stray write, an editor saving over a
file) are found as surely as a file cut short or missing, and an entry without its record (a write cut short, an
entry from before records existed) counts as damaged: its cache names it and builds it again.

XXH3-128 hashes at memory speed, against accidental damage, not an adversary. A file this process found intact is
hashed again only once it changed: any write changes its change time (ctime), even one that puts the modification
time back, so an unchanged (inode, size, mtime, ctime) is an unchanged file.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

_CHUNK = 1 << 23  # bytes hashed at a time


def write_record(directory: Path, record: str, suffixes: tuple[str, ...] | None = None) -> None:
    """Flush every file under ``directory`` (``suffixes``: only those whose names end so) to disk, then write
    ``record`` (a file name in it) with their sizes and checksums, flushed too: the record last, as it marks the entry
    complete, and in one rename, so that a process reading the entry meanwhile never reads half of it."""
    sizes, checksums = {}, {}
    for path in sorted(directory.rglob("*")):
        if not path.is_file() or path.name == record or path.name.startswith(f".{record}."):
            continue
        if suffixes is not None and not path.name.endswith(suffixes):
            continue
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())
        name = path.relative_to(directory).as_posix()
        sizes[name] = path.stat().st_size
        checksums[name] = file_checksum(path)
    staging = directory / f".{record}.{os.getpid()}"
    with open(staging, "w", encoding="utf-8") as handle:
        json.dump({"files": sizes, "xxh3_128": checksums}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staging, directory / record)


def damage_of(directory: Path, record: str) -> str | None:
    """What is wrong with the entry ``directory`` (None: every file ``record`` lists is there, at the size and
    checksum it had when written)."""
    try:
        written = json.loads((directory / record).read_text(encoding="utf-8"))
        sizes, checksums = dict(written["files"]), dict(written["xxh3_128"])
    except (OSError, ValueError, KeyError, TypeError):
        return (f"no readable {record}, the record of its files' sizes and checksums written last: a write cut "
                f"short, or an entry from before entries carried one")
    for name, size in sizes.items():
        path = directory / name
        if not path.is_file():
            return f"{name} is missing"
        found = path.stat()
        if found.st_size != size:
            return f"{name} has {found.st_size} bytes, {size} were written"
        if file_checksum(path) != checksums.get(name):
            return f"{name} does not hold the bytes written: its checksum differs"
    return None


# Checksums this process computed, by (path, inode, size, mtime, ctime): any write changes the ctime.
_known: dict[tuple[str, int, int, int, int], str] = {}


def file_checksum(path: Path) -> str:
    """XXH3-128 of a file's bytes, read in chunks (at memory speed: a file in the page cache costs little next to
    loading it); once per unchanged file in this process."""
    found = os.stat(path)
    stamp = (str(path), found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
    if stamp not in _known:
        _known[stamp] = _hashed(path)
    return _known[stamp]


def _hashed(path: Path) -> str:
    import xxhash

    digest = xxhash.xxh3_128()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
