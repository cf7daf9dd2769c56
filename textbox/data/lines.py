"""Plain line files: the one line reader (a whole file at once, or streamed a line at a time) and the checks of a
plain example (a text source, one or more non-empty references).

Both readers read alike: UTF-8, lines without their line ends (\\n or \\r\\n) nor a leading byte-order mark, blank
lines kept, a final line end adding no empty line; bytes that are not UTF-8 are a DataError naming the file and line.
The streamed reader is what a large training split is read through (textbox.data.streamed), so that its text is
never held whole.
"""
from __future__ import annotations

import ast
import codecs
import sys
from pathlib import Path
from typing import Iterator

from textbox.config.errors import DataError

_CHUNK = 1 << 23  # bytes read at a time when counting lines


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file (``-``: standard input) without their line ends (\\n or \\r\\n) nor a leading
    byte-order mark (which Windows editors write; it is not text); nothing else is stripped, blank lines are kept,
    and a final line end adds no empty line. The one reader of line files: dataset splits, ``--input_file`` and
    the files ``python -m textbox.evaluate`` scores all read alike. Bytes that are not UTF-8 (or a file that cannot
    be read) are a DataError naming the file and line; callers check what else they need."""
    where = "stdin" if str(path) == "-" else str(path)
    if str(path) == "-":
        stream = getattr(sys.stdin, "buffer", None)
        data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
    else:
        try:
            data = Path(path).read_bytes()
        except OSError as error:  # unreadable (permissions, a failing disk): the file is named, not a traceback
            raise _unreadable(where, error) from error
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise _not_utf8(where, line, data[error.start:error.end]) from error
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def stream_lines(path: Path) -> Iterator[str]:
    """``read_lines(path)``'s lines one at a time, read as they are needed: the same lines and the same errors
    (a line that is not UTF-8 is found when it is reached)."""
    try:
        handle = Path(path).open("rb")
    except OSError as error:
        raise _unreadable(str(path), error) from error
    with handle:
        number = 0
        try:
            for number, raw in enumerate(handle, 1):
                if number == 1:
                    raw = raw.removeprefix(codecs.BOM_UTF8)
                if raw.endswith(b"\n"):
                    raw = raw[:-1]
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise _not_utf8(str(path), number, raw[error.start:error.end]) from error
        except OSError as error:
            raise _unreadable(f"{path}:{number + 1}", error) from error


def count_lines(path: Path) -> int:
    """How many lines ``read_lines(path)`` holds, counted in chunks (the file is never held whole)."""
    count, last = 0, b"\n"
    try:
        with Path(path).open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                count += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError as error:
        raise _unreadable(str(path), error) from error
    return count + (last != b"\n")


def dataset_file(path: Path) -> Path:
    """``path``, a plain dataset file (<split>.src or .tgt): a missing or empty file is an error naming it."""
    if not path.is_file():
        raise DataError(f"{path} does not exist; a plain dataset needs {path.stem}.src and {path.stem}.tgt "
                        f"in {path.parent}")
    if path.stat().st_size == 0:
        raise DataError(f"{path} is empty")
    return path


def same_line_counts(source_path: Path, sources: int, target_path: Path, targets: int) -> None:
    """A plain split's two files hold one line per example each."""
    if sources != targets:
        raise DataError(f"{source_path} has {sources} lines but {target_path} has {targets}; "
                        f"line i of the .tgt file must be the target of line i of the .src file")


def empty_source(source: object, where: str) -> DataError:
    """The error of a source that is empty or not text (``where``: its file and line, or row)."""
    return DataError(f"{where}: the source is empty or not text ({source!r:.60}); every example needs one")


def target_references(target: object, where: str) -> list[str]:
    """A target as a list of references: a list (json, parquet), or a text read by ``parse_references``."""
    found = parse_references(target) if isinstance(target, str) else target
    if not isinstance(found, (list, tuple)) or not found or \
            not all(isinstance(reference, str) and reference.strip() for reference in found):
        raise empty_target(target, where)
    return list(found)


def empty_target(target: object, where: str) -> DataError:
    """The error of a target that holds no reference, an empty one or one that is not text."""
    return DataError(f"{where}: the target is empty or not text ({target!r:.60}); "
                     f"give a text or a list of non-empty texts")


def parse_references(text: str) -> list[str]:
    """The references a target text holds: those of a Python list literal of strings, whitespace around it
    allowed ("['a cat', 'the cat']"), else the text itself as written ("[laughs] a cat" is one reference).
    The one parser of reference texts: a run's dataset targets and the files textbox-evaluate scores."""
    literal = text.strip()
    if literal.startswith("[") and literal.endswith("]"):
        try:
            value = ast.literal_eval(literal)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = None
        if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
            return value
    return [text]


def _unreadable(where: str, error: OSError) -> DataError:
    return DataError(f"cannot read {where} ({error.strerror or error}); check that it is a readable file and run "
                     f"again")


def _not_utf8(where: str, line: int, found: bytes) -> DataError:
    return DataError(f"{where}:{line}: bytes {found!r} are not UTF-8; save the file as UTF-8")
