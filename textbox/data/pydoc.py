"""The built-in ``pydoc`` dataset: code of a Python function -> the first sentence of its docstring.

It is built from what TextBox's own set-up installs, so a fresh checkout trains and tests offline: the standard
library of the running Python and the Python code of the packages in PACKAGES. Only torch is read: the README's
set-up line pins it (torch==2.13.0), so the set is the same on every machine with that Python; the other packages
TextBox installs (numpy, scipy, matplotlib, nltk: ~9,000 more pairs) are not pinned, and a set built from them
would differ from machine to machine. The stdlib alone gave too few pairs for a model trained from scratch in
minutes (5,024 training pairs: test BLEU about 1, one sentence for most inputs); README.txt and ``signature()``
record the versions a set was built from.

- Sources start with the function's heading in plain words, then `` | `` and its code: ``counter . increment
  ( self , step ) | def increment(self, step=1): ...``. The heading is the owning top-level class, the function
  name and its parameter names, each identifier split at underscores and camel case and lower-cased
  (``_dump_registry`` reads ``dump registry``): the words a summary is written in. A model trained from scratch
  for minutes learns to use them (the default run: outputs specific to their input) where on the code alone it
  wrote one sentence for most inputs, since in code the same words hide inside identifiers.
- The code is ``ast.unparse`` of every function and method, decorators included, with its own docstring removed
  (docstrings of nested functions stay: they are part of the code; a body that is only a docstring becomes
  ``pass``). Comments are gone by construction.
- A source must fit on one line: each newline of the code becomes the visible token `` NEWLINE `` (indentation
  after it is kept), so ``source.split(" | ", 1)[1].replace(" NEWLINE ", "\\n")`` gives back the code (a heading
  never holds `` | ``). Functions whose code already holds that token or a carriage return are skipped, since
  they could not round-trip.
- Targets are the docstring's first paragraph with reStructuredText markup taken off (``:func:`name``` and
  ```name``` read ``name``), whitespace-normalised and cut after the first ". ". Skipped: targets that do not
  start with a letter, that hold a section header, field list or doctest instead of a summary (``Args:``,
  ``Parameters``, ``:param``, ``>>>``, ...), targets under 3 words, and sources over 2000 characters.
- Identical sources are kept once (the first in root order, then sorted file order). Test suites and files that
  do not parse are skipped.
- Splits are by class (see ``split_of``): the methods of one class, or one module-level function, all land in
  the same split, so a test example's class was never trained on (its module's other classes may have been);
  ~95/2/3 train/valid/test. The build is deterministic for one Python and one set of package versions.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

BUILD_VERSION = 3  # raise it whenever the rules above change: an older built set is then rebuilt
PACKAGES = ("torch",)  # pinned by the set-up line; see the module docstring before adding one
NEWLINE = " NEWLINE "
MIN_TARGET_WORDS = 3
MAX_SOURCE_CHARS = 2000
TEST_PERCENT, VALID_PERCENT = 3, 2
SKIPPED_DIRECTORIES = frozenset({"test", "tests", "testing", "idle_test", "site-packages", "dist-packages",
                                 "__pycache__"})
_BLANK_LINE = re.compile(r"\n\s*\n")
_CAMEL_HUMP = re.compile(r"([a-z0-9])([A-Z])|([A-Z])([A-Z][a-z])")  # fooBar, HTTPServer
HEADING_END = " | "
_ROLE = re.compile(r":[\w:.-]+:`~?([^`]*)`")  # :func:`~os.path.join` -> os.path.join
_NOT_A_SUMMARY = re.compile(r"Args:|Arguments:|Parameters|:param|:return|:type|---|===|>>>|Examples?:|Returns?:|"
                            r"Note:|TODO|XXX|https?:|\.\. ")
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")
_Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Root:
    """A directory of Python code; ``package`` prefixes its module names ('' for the standard library)."""

    package: str
    path: Path


@dataclass(frozen=True)
class Pair:
    """One example and the class or module-level function it belongs to (which decides its split)."""

    group: str
    source: str
    target: str


def default_roots() -> list[Root]:
    """The standard library, then each installed package of PACKAGES (found without importing it)."""
    roots = [Root("", Path(sysconfig.get_paths()["stdlib"]))]
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            roots.append(Root(package, Path(list(spec.submodule_search_locations)[0])))
    return roots


def signature() -> str:
    """Everything a built set depends on: this builder's rules and the versions of the code it reads. A set built
    under another signature is rebuilt (textbox.data.builtin)."""
    versions = ", ".join(f"{package} {_version(package)}" for package in PACKAGES)
    return f"pydoc {BUILD_VERSION}; Python {platform.python_version()}; {versions}"


def build(directory: Path, log: Callable[[str], None], roots: Sequence[Root] | None = None) -> None:
    """Write {train,valid,test}.{src,tgt} and README.txt into ``directory`` (an empty staging directory)."""
    roots = default_roots() if roots is None else list(roots)
    pairs, unparsable = collect_pairs(roots)
    counts = write_splits(directory, pairs)
    (directory / "README.txt").write_text(_readme(roots, counts, unparsable), encoding="utf-8")
    log(f"pydoc: {counts} pairs from {read_from(roots)} ({unparsable} files that do not parse were skipped)")


def write_splits(directory: Path, pairs: Sequence[Pair]) -> str:
    """Write each pair to the split of its group (``split_of``); returns the counts for the log and README."""
    by_split: dict[str, list[Pair]] = {"train": [], "valid": [], "test": []}
    for pair in pairs:
        by_split[split_of(pair.group)].append(pair)
    for split, members in by_split.items():
        (directory / f"{split}.src").write_text("".join(p.source + "\n" for p in members), encoding="utf-8")
        (directory / f"{split}.tgt").write_text("".join(p.target + "\n" for p in members), encoding="utf-8")
    return ", ".join(f"{split} {len(members)}" for split, members in by_split.items())


def read_from(roots: Sequence[Root]) -> str:
    """What a set was read from, in words, for its build log line."""
    return f"the standard library and {', '.join(r.package for r in roots[1:]) or 'nothing'}"


def collect_pairs(roots: Sequence[Root]) -> tuple[list[Pair], int]:
    """Every usable pair under ``roots`` in root order and sorted file order, identical sources once; also the
    number of files that failed to parse."""
    pairs: list[Pair] = []
    seen_code: set[str] = set()
    modules = ParsedModules(roots)
    for module, tree in modules:
        for owner, function_heading, code, target in function_pairs(tree):
            if code not in seen_code:  # identical code under another class: kept once
                seen_code.add(code)
                pairs.append(Pair(f"{module}:{owner}", function_heading + HEADING_END + code, target))
    return pairs, modules.unparsable


class ParsedModules:
    """(dotted module name, syntax tree) of every module under the roots, in root order and sorted file order;
    ``unparsable`` counts the files skipped because they do not parse (known once the iteration ends)."""

    def __init__(self, roots: Sequence[Root]) -> None:
        self.roots = roots
        self.unparsable = 0

    def __iter__(self) -> Iterator[tuple[str, ast.Module]]:
        for root in self.roots:
            for module, path in module_files(root.path, root.package):
                try:
                    tree = ast.parse(path.read_bytes(), filename=str(path))
                except (SyntaxError, ValueError):
                    self.unparsable += 1
                    continue
                yield module, tree


def module_files(root: Path, package: str = "") -> Iterator[tuple[str, Path]]:
    """(dotted module name, path) of each .py file under ``root``, sorted, test suites left out."""
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d not in SKIPPED_DIRECTORIES)
        for file in sorted(files):
            if file.endswith(".py") and not file.startswith("test_"):
                path = Path(directory) / file
                parts = (package,) * bool(package) + path.relative_to(root).with_suffix("").parts
                if parts[-1] == "__init__" and len(parts) > 1:
                    parts = parts[:-1]
                yield ".".join(parts), path


def function_pairs(tree: ast.Module) -> Iterator[tuple[str, str, str, str]]:
    """(owner, heading, one-line code without docstring, summary) of every usable function in ``tree``; the owner
    is the top-level class a method belongs to, or the top-level function itself."""
    for owner, node, target in summarised_functions(tree):
        body = node.body
        node.body = body[1:] or [ast.Pass()]  # unparsed without its docstring, then put back: the tree stays intact
        code = ast.unparse(node)
        node.body = body
        if len(code) > MAX_SOURCE_CHARS or NEWLINE in code or "\r" in code:
            continue
        yield owner, heading(owner, node), code.replace("\n", NEWLINE), target


def summarised_functions(tree: ast.Module) -> Iterator[tuple[str, _Function, str]]:
    """(owner, function, summary) of every function in ``tree`` whose docstring has a usable summary."""
    for owner, node in _functions(tree):
        docstring = ast.get_docstring(node, clean=True)
        target = summary(docstring) if docstring else None
        if target is not None:
            yield owner, node, target


def heading(owner: str, function: _Function) -> str:
    """The owning class, the function's name and its parameter names in plain lower-case words."""
    arguments = function.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs,
                             arguments.kwarg) if a is not None]
    owned = f"{words(owner)} . " if owner != function.name else ""
    parameters = " , ".join(words(name) for name in names)
    return f"{owned}{words(function.name)} ( {parameters} )" if parameters else f"{owned}{words(function.name)} ( )"


def words(identifier: str) -> str:
    """``_dumpRegistry_v2`` -> ``dump registry v2``, ``HTTPServer`` -> ``http server``: an identifier split at
    underscores and camel humps."""
    split = _CAMEL_HUMP.sub(lambda hump: " ".join(part for part in hump.groups() if part), identifier)
    return " ".join(split.replace("_", " ").lower().split())


def _functions(node: ast.AST, owner: str | None = None) -> Iterator[tuple[str, _Function]]:
    """Functions and methods under ``node`` in source order, nested ones included, each with its top-level owner.

    Only statement lists are visited: functions cannot hide in expressions, and skipping those is
    several times faster than ``ast.walk``.
    """
    for field in _STATEMENT_LISTS:
        for child in getattr(node, field, ()):
            named = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            child_owner = owner or (child.name if named else None)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield child_owner, child
            yield from _functions(child, child_owner)


def summary(docstring: str) -> str | None:
    """The docstring's first sentence without markup, or None when it is not a usable summary."""
    plain = _ROLE.sub(r"\1", docstring).replace("``", "").replace("`", "")
    target = first_sentence(plain)
    if not target[:1].isalpha() or _NOT_A_SUMMARY.search(target) or len(target.split()) < MIN_TARGET_WORDS:
        return None
    return target


def first_sentence(docstring: str) -> str:
    """The docstring's first paragraph on one line, cut after its first ". "."""
    paragraph = " ".join(_BLANK_LINE.split(docstring.strip(), maxsplit=1)[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[:end + 1]


def split_of(group: str) -> str:
    """train, valid or test for every function of ``group`` ("module:class"): stable across runs and machines."""
    bucket = int(hashlib.md5(group.encode("utf-8")).hexdigest(), 16) % 100
    return "test" if bucket < TEST_PERCENT else "valid" if bucket < TEST_PERCENT + VALID_PERCENT else "train"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _readme(roots: Sequence[Root], counts: str, unparsable: int) -> str:
    read = "; ".join(f"{root.package or 'stdlib'} {root.path}" for root in roots)
    return (f"pydoc: Python functions -> the first sentence of their docstring.\n"
            f"Built by textbox.data.pydoc ({signature()}) from: {read}.\n"
            f"Pairs: {counts}. Files that did not parse and were skipped: {unparsable}.\n"
            f"Newlines in sources are written as '{NEWLINE.strip()}'; the rules are in the module docstring.\n")
