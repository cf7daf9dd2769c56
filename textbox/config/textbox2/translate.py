"""Applying TextBox 2.0's names (textbox/config/textbox2/names.py) to a layer of the configuration, and the table.

Why a module of its own: the table is data; reading a layer through it (notes, refusals, checks that wait for the
merged configuration) is one small job the loader calls. Standard library only.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from textbox.config.families import FAMILIES, REFUSED_MODELS
from textbox.config.textbox2.names import TEXTBOX_NAMES, Check
from textbox.config.textbox2.values import TEXTBOX_ENTRIES, TEXTBOX_REFUSED_VALUES, TEXTBOX_VALUES


def translate_layer(origin: str, layer: Mapping[str, Any], ours: Mapping[str, Any], problems: list[str],
                    notes: list[str], checks: list[tuple[str, Check]]) -> dict[str, Any]:
    """``layer`` with TextBox 2.0's names replaced by ours (``ours``: our schema, whose names stay as they are).

    A TextBox name that also sets one of our keys given in the same layer with another value is a problem (the
    layer would say two things); dict entries merge, ours winning only when equal."""
    translated = {key: value for key, value in layer.items() if key in ours or key not in TEXTBOX_NAMES}
    for key in set(translated) & (set(TEXTBOX_VALUES) | set(TEXTBOX_ENTRIES)):
        where = f"--{key}" if origin == "command line" else f"{key!r} in {origin}"
        value = translated[key]
        spelled = _our_value(value, TEXTBOX_VALUES.get(key, {}))
        if key in TEXTBOX_ENTRIES and isinstance(value, dict):
            spelled = _our_entries(value, TEXTBOX_ENTRIES[key], f"TextBox 2.0's {where}", problems)
        if isinstance(spelled, dict):  # "@key" entries are our top-level keys
            for entry in [entry for entry in spelled if entry.startswith("@")]:
                top, top_value = entry[1:], spelled.pop(entry)
                if top in translated and translated[top] != top_value:
                    problems.append(f"TextBox 2.0's {where} sets {top}={top_value!r}, but {origin} also gives "
                                    f"{top}={translated[top]!r}: keep one")
                translated[top] = top_value
        if spelled != value:
            translated[key] = spelled
            notes.append(f"TextBox 2.0's {where}={value!r} -> {key}={spelled!r}")
    for key, value in layer.items():
        if key in ours or key not in TEXTBOX_NAMES:
            continue
        outcome = TEXTBOX_NAMES[key].translate(value)
        named = f"--{key}" if origin == "command line" else f"{key!r} in {origin}"
        if outcome.problem:
            problems.append(f"TextBox 2.0's {named}: {outcome.problem}")
            continue
        for our, our_value in outcome.sets.items():
            if our in translated and translated[our] != our_value:
                problems.append(f"TextBox 2.0's {named}={value!r} means {our}={our_value!r}, but {origin} also "
                                f"gives {our}={translated[our]!r}: keep one")
            translated[our] = our_value
        for our, entries in outcome.entries.items():
            current = translated.get(our, {})
            current = current if isinstance(current, dict) else {}
            for entry, entry_value in entries.items():
                if entry in current and current[entry] != entry_value:
                    problems.append(f"TextBox 2.0's {named}={value!r} means {our}['{entry}']={entry_value!r}, but "
                                    f"{origin} also gives {our}['{entry}']={current[entry]!r}: keep one")
            translated[our] = {**entries, **current}
        if outcome.check is not None:
            checks.append((named, outcome.check))
        notes.append(f"TextBox 2.0's {named}={value!r} -> {outcome.note}")
    return translated


def _our_value(value: Any, aliases: Mapping[Any, Any]) -> Any:
    """A value (or each item of a list) in our spelling."""
    if isinstance(value, (list, tuple)):
        return [_our_value(item, aliases) for item in value]
    spelled = value.lower() if isinstance(value, str) else None
    return aliases[spelled] if spelled in aliases else value


def _our_entries(value: dict[str, Any], entries: Mapping[str, Any], named: str, problems: list[str]) -> dict[str, Any]:
    """A dict's TextBox entries replaced by ours; an entry given both ways with different values is a problem."""
    ours = {entry: item for entry, item in value.items() if entry not in entries}
    for entry, item in value.items():
        if entry not in entries:
            continue
        became = entries[entry](item)
        if isinstance(became, str):
            problems.append(f"{named}: {entry!r}: {became}")
            continue
        for our, our_item in became.items():
            if our in ours and ours[our] != our_item:
                problems.append(f"{named}: {entry!r}={item!r} means {our!r}={our_item!r}, but {our!r}="
                                f"{ours[our]!r} is given too: keep one")
            ours[our] = our_item
    return ours


def check_translations(checks: list[tuple[str, Check]], values: Mapping[str, Any]) -> list[str]:
    """The refusals of translated options that depend on the merged configuration."""
    found = []
    for named, check in checks:
        problem = check(values)
        if problem:
            found.append(f"TextBox 2.0's {named}: {problem}")
    return found


def render_table() -> str:
    """docs/textbox_names.md's key table."""
    lines = ["| TextBox 2.0 key | here |", "|---|---|"]
    lines += [f"| `{name}` | {entry.became} |" for name, entry in sorted(TEXTBOX_NAMES.items())]
    lines += [f"| `{key}: {value}` | `{key}: {ours!r}` |" for key, aliases in TEXTBOX_VALUES.items()
              for value, ours in aliases.items()]
    lines += [f"| `{key}: {value}` | refused: {pointer} |" for key, refused in TEXTBOX_REFUSED_VALUES.items()
              for value, pointer in refused.items()]
    lines += [f"| `{key}: {{'{entry}': v}}` | {_describe_entry(translate)} |"
              for key, entries in TEXTBOX_ENTRIES.items() for entry, translate in entries.items()]
    return "\n".join(lines)


def _describe_entry(translate: Any) -> str:
    became = translate("v")
    if isinstance(became, str):
        zero = translate(0)
        return f"0: no setting; otherwise refused: {became}" if zero == {} else f"refused: {became}"
    return "`" + ", ".join(f"{name.lstrip('@')}: {value}" + (" (top-level key)" if name.startswith("@") else "")
                           for name, value in became.items()) + "`"


def render_models() -> str:
    """docs/textbox_names.md's model table: each TextBox 2.0 --model name (any case) and what loads it here."""
    lines = ["| TextBox 2.0 `--model` | here |", "|---|---|"]
    for name, entry in sorted(FAMILIES.items()):
        group = f"; its checkpoints are detected as `{entry.checkpoints}`" if entry.group else ""
        lines.append(f"| `{name}` | {entry.kind.what} (`{entry.kind.name}` builder){group} |")
    lines += [f"| `{name}` | refused: {pointer} |" for name, pointer in sorted(REFUSED_MODELS.items())]
    return "\n".join(lines)


# --- data_path -----------------------------------------------------------------------------------------------------
# TextBox 2.0 read a dataset from data_path/<dataset> (its overall.yaml: data_path: 'dataset/'); here data_path is
# the dataset's own directory. A TextBox file run unchanged gives the parent: it is translated, not refused. On the
# command line the user types our key now, and a parent is refused with the directory to give (textbox.data.builtin).
TEXTBOX_DATA_ROOT = "dataset"  # TextBox 2.0's overall.yaml value ('dataset/'): the parent of its dataset folders


def translate_data_path(values: dict[str, Any], sources: Mapping[str, str], skip: str | None,
                        notes: list[str]) -> None:
    """data_path from a yaml file (not the command line, not ``skip``: a run's config.yaml, which holds ours) that
    is TextBox 2.0's parent of dataset directories becomes that dataset's directory, with a note."""
    value, origin = values.get("data_path"), sources.get("data_path", "default")
    if not isinstance(value, str) or origin in ("default", "command line", skip) or not value.strip():
        return
    directory, dataset = Path(value).expanduser(), str(values.get("dataset"))
    if holds_splits(directory):
        return  # a dataset directory: our meaning
    if directory.resolve() == Path(TEXTBOX_DATA_ROOT).resolve():
        values["data_path"] = None
        became = (f"data_path=None: {TEXTBOX_DATA_ROOT}/{dataset} here (or the catalogue's copy, or the built-in set "
                  f"built there)")
    elif (directory / dataset).is_dir():
        values["data_path"] = str(directory / dataset)
        became = f"data_path={values['data_path']!r}"
    else:
        return
    notes.append(f"TextBox 2.0's data_path={value!r} in {origin} is the parent of the dataset directories (TextBox "
                 f"reads data_path/<dataset>) -> {became}")


def is_textbox_data_root(value: Any) -> bool:
    """TextBox 2.0's own data_path ('dataset/' holding dataset folders, no splits): it names no dataset."""
    return isinstance(value, str) and bool(value.strip()) and \
        Path(value).expanduser().resolve() == Path(TEXTBOX_DATA_ROOT).resolve() and not holds_splits(Path(value))


def holds_splits(directory: Path) -> bool:
    """A dataset's own directory: split files (train/valid/test.<ext>) in it."""
    return directory.is_dir() and any(path.is_file() and path.stem in ("train", "valid", "test")
                                      for path in directory.iterdir())
