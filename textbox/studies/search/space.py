"""Search-space files: one parameter per line, ``<label> <algorithm> <space>``, ``#`` starts a comment.

    learning_rate    loguniform (-8, 0)        # exp(uniform(-8, 0))
    train_batch_size choice     [16, 32, 64]

The algorithm is any hyperopt ``hp`` expression; the space is a Python literal (read with
ast.literal_eval): a list of options for choice/pchoice, the expression's arguments otherwise.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textbox.config.errors import TextBoxUserError
from textbox.utils.suggest import suggest

# Positional arguments each numeric expression accepts (randint takes one or two).
NUMERIC_SIGNATURES: dict[str, tuple[tuple[str, ...], ...]] = {
    "randint": (("upper",), ("low", "high")),
    "uniformint": (("low", "high"),),
    "uniform": (("low", "high"),),
    "quniform": (("low", "high", "q"),),
    "loguniform": (("log_low", "log_high"),),
    "qloguniform": (("log_low", "log_high", "q"),),
    "normal": (("mu", "sigma"),),
    "qnormal": (("mu", "sigma", "q"),),
    "lognormal": (("mu", "sigma"),),
    "qlognormal": (("mu", "sigma", "q"),),
}
OPTION_FORMS: dict[str, str] = {"choice": "[option, ...]", "pchoice": "[(probability, option), ...]"}
ALGORITHMS: tuple[str, ...] = (*OPTION_FORMS, *NUMERIC_SIGNATURES)


def accepted_forms() -> str:
    """The help text every space error ends with: the line format and each expression's arguments."""
    forms = [f"    <label> {name} {form}" for name, form in OPTION_FORMS.items()]
    forms += [f"    <label> {name} " + " or ".join(f"({', '.join(names)})" for names in signatures)
              for name, signatures in NUMERIC_SIGNATURES.items()]
    return "\n".join(["accepted forms (one parameter per line; # starts a comment; <label> is a config key):",
                      *forms, "  e.g. learning_rate loguniform (-8, 0)  |  train_batch_size choice [16, 32, 64]"])


class SpaceError(TextBoxUserError):
    """Every bad line of a space file, with its line number, then the accepted forms."""

    def __init__(self, path: str | Path, problems: list[tuple[int, str]]):
        lines = [f"search space {path}: {len(problems)} bad line{'s' if len(problems) != 1 else ''}:"]
        lines += [f"  line {number}: {problem}" for number, problem in problems]
        super().__init__("\n".join([*lines, accepted_forms()]))


@dataclass(frozen=True)
class SpaceEntry:
    """One line of a space file: ``arguments`` are the options (choice, pchoice) or the numbers (the rest)."""

    label: str
    algorithm: str
    arguments: tuple[object, ...]
    line: int

    def to_hyperopt(self) -> Any:
        """The hyperopt expression (a pyll graph) for this parameter."""
        from hyperopt import hp

        expression = getattr(hp, self.algorithm)
        if self.algorithm in OPTION_FORMS:
            return expression(self.label, list(self.arguments))
        return expression(self.label, *self.arguments)


def parse_space_file(path: str | Path) -> list[SpaceEntry]:
    """Read and check a space file; raise one SpaceError naming every bad line."""
    path = Path(path)
    if not path.is_file():
        raise TextBoxUserError(f"--space={path}: no such file; give a search-space file such as "
                               f"configs/hyper/example.space")
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: a leading byte-order mark is not part of the first line
    except UnicodeDecodeError:
        raise TextBoxUserError(f"--space={path}: not UTF-8 text") from None
    return parse_space_text(text, path)


def parse_space_text(text: str, source: str | Path) -> list[SpaceEntry]:
    entries: list[SpaceEntry] = []
    problems: list[tuple[int, str]] = []
    first_line_of: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            entry = _parse_line(line, number)
        except ValueError as problem:
            problems.append((number, str(problem)))
            continue
        if entry.label in first_line_of:
            problems.append((number, f"{entry.label!r} is already defined on line {first_line_of[entry.label]}"))
            continue
        first_line_of[entry.label] = number
        entries.append(entry)
    if problems:
        raise SpaceError(source, problems)
    if not entries:
        raise TextBoxUserError(f"search space {source}: defines no parameter\n{accepted_forms()}")
    return entries


def _parse_line(line: str, number: int) -> SpaceEntry:
    parts = line.strip().split(None, 2)
    if len(parts) < 3:
        raise ValueError(f"expected <label> <algorithm> <space>, got {line.strip()!r}")
    label, algorithm, space_text = parts
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}{suggest(algorithm, ALGORITHMS)}")
    space = _literal_before_comment(space_text)
    if algorithm in OPTION_FORMS:
        arguments = _check_options(algorithm, space)
    else:
        arguments = _check_numbers(algorithm, space)
    return SpaceEntry(label, algorithm, arguments, number)


def _literal_before_comment(text: str) -> object:
    """The Python literal in ``text``, ignoring a trailing ``# comment`` (a ``#`` inside a string stays)."""
    cuts = [len(text)] + [i for i, char in enumerate(text) if char == "#"]
    for cut in sorted(cuts, reverse=True):
        try:
            return ast.literal_eval(text[:cut].strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise ValueError(f"cannot read {text.strip()!r} as a Python literal (a list or a tuple of numbers)")


def _check_options(algorithm: str, space: object) -> tuple[object, ...]:
    if not isinstance(space, (list, tuple)) or len(space) == 0:
        raise ValueError(f"{algorithm} expects a non-empty list {OPTION_FORMS[algorithm]}, got {space!r}")
    if algorithm == "pchoice":
        if not all(isinstance(pair, (list, tuple)) and len(pair) == 2 and _is_number(pair[0]) and pair[0] > 0
                   for pair in space):
            raise ValueError(f"pchoice expects {OPTION_FORMS['pchoice']} with positive probabilities, got {space!r}")
        total = sum(probability for probability, _ in space)
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(f"pchoice probabilities must sum to 1, they sum to {total:g}")
        return tuple(tuple(pair) for pair in space)
    return tuple(space)


def _check_numbers(algorithm: str, space: Any) -> tuple[float | int, ...]:
    arguments = tuple(space) if isinstance(space, (list, tuple)) else (space,)
    signatures = NUMERIC_SIGNATURES[algorithm]
    names = next((names for names in signatures if len(names) == len(arguments)), None)
    expected = " or ".join(f"({', '.join(names)})" for names in signatures)
    if names is None or not all(_is_number(value) for value in arguments):
        raise ValueError(f"{algorithm} expects {expected}, got {space!r}")
    values = dict(zip(names, arguments))
    if algorithm == "randint" and not all(isinstance(value, int) for value in arguments):
        raise ValueError(f"randint expects integers {expected}, got {space!r}")
    low, high = values.get("low", values.get("log_low")), values.get("high", values.get("log_high"))
    if low is not None and not low < high:
        raise ValueError(f"{algorithm}: the low bound {low} must be smaller than the high bound {high}")
    if values.get("upper", 1) < 1:
        raise ValueError(f"randint: upper must be at least 1, got {values['upper']}")
    for name in ("sigma", "q"):
        if values.get(name, 1) <= 0:
            raise ValueError(f"{algorithm}: {name} must be positive, got {values[name]}")
    return arguments


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
