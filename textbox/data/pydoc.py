"""The built-in ``pydoc`` dataset: code of a standard-library function -> first sentence of its docstring.

It is built from the Python installed on this machine, so a fresh checkout can train and test offline.

- Sources are ``ast.unparse`` of every function and method, decorators included, with its own docstring
  removed (docstrings of nested functions stay: they are part of the code). Comments are gone by
  construction. Functions whose body is only a docstring are skipped: there is no code to describe.
- A source must fit on one line: each newline becomes the visible token `` NEWLINE `` (indentation after
  it is kept), so ``source.replace(" NEWLINE ", "\\n")`` gives back the exact code. Functions whose code
  already holds that token or a carriage return are skipped, since they could not round-trip.
- Targets are the docstring's first paragraph, whitespace-normalised and cut after the first ". ".
  Targets under 3 words and sources over 2000 characters are skipped.
- Identical sources are kept once (the first in sorted file order). Test suites, site-packages and files
  that do not parse are skipped.
- Splits are by module (md5 of the dotted module name: ~80/10/10), so no module's functions sit in both
  train and test; the build is deterministic for one Python installation.
"""
from __future__ import annotations

import ast
import hashlib
import os
import platform
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

NEWLINE = " NEWLINE "
MIN_TARGET_WORDS = 3
MAX_SOURCE_CHARS = 2000
SKIPPED_DIRECTORIES = frozenset({"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"})
_BLANK_LINE = re.compile(r"\n\s*\n")
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


@dataclass(frozen=True)
class Pair:
    """One example and the module it comes from (which decides its split)."""

    module: str
    source: str
    target: str


def build(directory: Path, log: Callable[[str], None], stdlib_root: Path | None = None) -> None:
    """Write {train,valid,test}.{src,tgt} and README.txt into ``directory`` (an empty staging directory)."""
    root = Path(stdlib_root or sysconfig.get_paths()["stdlib"])
    pairs, unparsable = collect_pairs(root)
    by_split: dict[str, list[Pair]] = {"train": [], "valid": [], "test": []}
    for pair in pairs:
        by_split[split_of(pair.module)].append(pair)
    for split, members in by_split.items():
        (directory / f"{split}.src").write_text("".join(p.source + "\n" for p in members), encoding="utf-8")
        (directory / f"{split}.tgt").write_text("".join(p.target + "\n" for p in members), encoding="utf-8")
    counts = ", ".join(f"{split} {len(members)}" for split, members in by_split.items())
    (directory / "README.txt").write_text(_readme(root, counts, unparsable), encoding="utf-8")
    log(f"pydoc: {counts} pairs from {root} ({unparsable} files that do not parse were skipped)")


def collect_pairs(root: Path) -> tuple[list[Pair], int]:
    """Every usable (module, source, target) under ``root`` in sorted file order, identical sources once;
    also the number of files that failed to parse."""
    pairs: list[Pair] = []
    seen_sources: set[str] = set()
    unparsable = 0
    for module, path in module_files(root):
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError):
            unparsable += 1
            continue
        for source, target in function_pairs(tree):
            if source not in seen_sources:
                seen_sources.add(source)
                pairs.append(Pair(module, source, target))
    return pairs, unparsable


def module_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(dotted module name, path) of each .py file under ``root``, sorted, test suites left out."""
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d not in SKIPPED_DIRECTORIES)
        for file in sorted(files):
            if file.endswith(".py") and not file.startswith("test_"):
                path = Path(directory) / file
                parts = path.relative_to(root).with_suffix("").parts
                if parts[-1] == "__init__" and len(parts) > 1:
                    parts = parts[:-1]
                yield ".".join(parts), path


def function_pairs(tree: ast.Module) -> Iterator[tuple[str, str]]:
    """(one-line source without docstring, first docstring sentence) of every usable function in ``tree``."""
    for node in _functions(tree):
        docstring = ast.get_docstring(node, clean=True)
        if not docstring or len(node.body) < 2:
            continue
        target = first_sentence(docstring)
        if len(target.split()) < MIN_TARGET_WORDS:
            continue
        body = node.body
        node.body = body[1:]  # unparse without the docstring, then put it back: the tree stays intact
        code = ast.unparse(node)
        node.body = body
        if len(code) > MAX_SOURCE_CHARS or NEWLINE in code or "\r" in code:
            continue
        yield code.replace("\n", NEWLINE), target


def _functions(node: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Functions and methods under ``node`` in source order, nested ones included.

    Only statement lists are visited: functions cannot hide in expressions, and skipping those is
    several times faster than ``ast.walk``.
    """
    for field in _STATEMENT_LISTS:
        for child in getattr(node, field, ()):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield child
            yield from _functions(child)


def first_sentence(docstring: str) -> str:
    """The docstring's first paragraph on one line, cut after its first ". "."""
    paragraph = " ".join(_BLANK_LINE.split(docstring.strip(), maxsplit=1)[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[:end + 1]


def split_of(module: str) -> str:
    """train, valid or test for every function of ``module``: stable across runs and machines."""
    bucket = int(hashlib.md5(module.encode("utf-8")).hexdigest(), 16) % 10
    return "test" if bucket == 0 else "valid" if bucket == 1 else "train"


def _readme(root: Path, counts: str, unparsable: int) -> str:
    return (f"pydoc: Python standard-library functions -> first sentence of their docstring.\n"
            f"Built by textbox.data.pydoc from {root} (Python {platform.python_version()}).\n"
            f"Pairs: {counts}. Files that did not parse and were skipped: {unparsable}.\n"
            f"Newlines in sources are written as '{NEWLINE.strip()}'; the rules are in the module docstring.\n")
