"""Splits held by ``datasets`` tables: a hub dataset (data_format=hub; for a catalogue entry, the original dataset its
``original`` field names) and a folder written by ``DatasetDict.save_to_disk`` (data_format=disk), their columns
mapped to sources and targets (src_field / tgt_field; ``translation.en`` reads a dict column's entry, as WMT's
``translation`` column holds both languages).

Readers only read: textbox.data.readers checks what they return (text sources, one or more references).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from textbox.config.errors import DataError
from textbox.config.loader import Config

if TYPE_CHECKING:
    import datasets

HUB_SETTINGS = ("hub_name", "hub_subset", "split_names", "src_field", "tgt_field")
# A catalogue entry's ``original`` field (configs/dataset/<name>.yaml): its names -> our keys.
ORIGINAL_FIELDS = {"hub": "hub_name", "subset": "hub_subset", "splits": "split_names", "source": "src_field",
                   "target": "tgt_field"}
ORIGINAL_NOTES = ("licence", "card")


@dataclass
class RawSplit:
    """Values as stored, before checks; ``locate_*(i)`` names where example i lives, for messages."""

    sources: Sequence[Any]
    targets: Sequence[Any]
    locate_source: Callable[[int], str]
    locate_target: Callable[[int], str]


def hub_settings(config: Config) -> dict[str, Any]:
    """hub_name, hub_subset, split_names, src_field, tgt_field of a hub read: the keys given, else the catalogue
    entry's original dataset (``--dataset=samsum --data_format=hub``), else the defaults."""
    original = (config["catalogue"] or {}).get("original") or {}
    from_original = {ours: original[theirs] for theirs, ours in ORIGINAL_FIELDS.items() if theirs in original}
    return {key: config[key] if config.source_of(key) != "default" or key not in from_original
            else from_original[key] for key in HUB_SETTINGS}


def original_problems(original: Mapping[str, object], where: str) -> list[str]:
    """A catalogue entry's ``original`` names a hub dataset with known fields."""
    known = (*ORIGINAL_FIELDS, *ORIGINAL_NOTES)
    problems = [f"{where}: unknown field {field!r} of original (fields: {', '.join(known)})"
                for field in original if field not in known]
    return problems + [f"{where}: original needs {field!r}" for field in ("hub", "source", "target", "licence")
                       if field not in original]


def read_hub(config: Config, name: str) -> RawSplit:
    import datasets

    settings = hub_settings(config)
    hub_split = _split_name(settings["split_names"], name)
    try:
        table = datasets.load_dataset(settings["hub_name"], settings["hub_subset"], split=hub_split)
    except (OSError, ValueError, datasets.exceptions.DatasetsError) as error:
        raise DataError(f"cannot load split {hub_split!r} of hub dataset {settings['hub_name']!r}: {error}. "
                        f"The hub needs network access (HF_DATASETS_OFFLINE unset); offline, save the data with "
                        f"save_to_disk (--data_format=disk) or as json/csv/parquet files, and set --data_path") \
            from error
    return columns(table, f"hub dataset {settings['hub_name']} split {hub_split}", settings)


def read_disk(config: Config, directory: Path, name: str) -> RawSplit:
    """The split of a folder ``DatasetDict.save_to_disk`` wrote (its split named by split_names)."""
    import datasets

    if not (directory / "dataset_dict.json").is_file():
        raise DataError(f"{directory} holds no dataset_dict.json: data_format=disk reads a folder written by "
                        f"DatasetDict.save_to_disk (train/validation/test splits), e.g. "
                        f"datasets.load_dataset(...).save_to_disk('{directory}')")
    hub_split = _split_name(config.split_names, name)
    try:
        splits = datasets.load_from_disk(str(directory))
    except (OSError, ValueError, FileNotFoundError) as error:
        raise DataError(f"{directory} cannot be read by datasets.load_from_disk: {error}") from error
    if hub_split not in splits:
        raise DataError(f"{directory} has no split {hub_split!r} (it has {', '.join(splits)}); set "
                        f"--split_names={{'{name}': <one of them>, ...}}")
    return columns(splits[hub_split], f"{directory} split {hub_split}",
                   {"src_field": config.src_field, "tgt_field": config.tgt_field})


def _split_name(split_names: Mapping[str, str], name: str) -> str:
    if name not in split_names:
        raise DataError(f"split_names has no entry for the {name} split; "
                        f"add one, e.g. --split_names={{'train': 'train', 'valid': 'validation', 'test': 'test'}}")
    return split_names[name]


def columns(table: datasets.Dataset, origin: str, fields: Mapping[str, str]) -> RawSplit:
    """Source and target columns of a datasets table (``fields``: src_field, tgt_field), or a DataError naming
    the missing one."""
    if table.num_rows == 0:
        raise DataError(f"{origin} has no rows")
    source_field, target_field = fields["src_field"], fields["tgt_field"]
    for key, field in (("src_field", source_field), ("tgt_field", target_field)):
        if field.split(".")[0] not in table.column_names:
            raise DataError(f"{origin} has no column {field.split('.')[0]!r} (columns: "
                            f"{', '.join(table.column_names)}); set --{key}=<column>")
    wanted = list(dict.fromkeys(field.split(".")[0] for field in (source_field, target_field)))
    values = table.select_columns(wanted).to_dict()  # plain lists: fast to walk
    return RawSplit(_entries(values, source_field, origin), _entries(values, target_field, origin),
                    lambda i: f"{origin} row {i + 1} ({source_field})",
                    lambda i: f"{origin} row {i + 1} ({target_field})")


def _entries(values: Mapping[str, list[object]], field: str, origin: str) -> list[object]:
    """A column's values, or (``column.key``) each row's entry ``key`` of a dict column."""
    column, _, key = field.partition(".")
    if not key:
        return values[column]
    rows = values[column]
    if rows and not (isinstance(rows[0], dict) and key in rows[0]):
        raise DataError(f"{origin}: column {column!r} holds no {key!r} entry ({rows[0]!r:.80}); set the field to "
                        f"one of its entries, e.g. {column}.<entry>")
    return [row.get(key) if isinstance(row, dict) else None for row in rows]
