"""Read a dataset's splits into ``Split``s: plain text files, json/jsonl/csv/parquet files, the hub, or a
save_to_disk folder (those two in textbox.data.tables).

Readers only read and check: prompts and truncation belong to tokenisation, so that the raw text stays
available to the metrics. Every problem in the files is a ``DataError`` naming the file and line (or row).
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Sequence, overload

from textbox.config.errors import DataError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data import catalogue
from textbox.data.builtin import BUILTIN_DATASETS, ensure_builtin
from textbox.data.instructions import instruction_file, read_alpaca, read_messages
from textbox.data.lines import dataset_file, empty_source, read_lines, same_line_counts, target_references
from textbox.data.split import Split
from textbox.data.streamed import ReadSplit, StreamedSplit
from textbox.data.tables import RawSplit, columns, read_disk, read_hub
from textbox.utils import checksums, leases

if TYPE_CHECKING:
    import datasets

SPLITS = ("train", "valid", "test")
TABULAR_BUILDERS = {"json": "json", "jsonl": "json", "csv": "csv", "parquet": "parquet"}  # format -> builder
QUICK_TEST_EXAMPLES = 32
COLUMN_KEYS = ("src_field", "tgt_field")  # read by the tabular, hub and disk readers only
INSTRUCTION_FORMATS = ("alpaca", "messages")  # fixed fields: textbox.data.instructions
HUB_KEYS = ("hub_name", "hub_subset", "split_names")  # read by the hub reader only (split_names: disk too)
TABLES_RECORD = "textbox_checksums.json"  # datasets' tables of a file: sizes and checksums (textbox.utils.checksums)


def dataset_directory(config: Config) -> Path:
    """Where the dataset files are: ``data_path``, or dataset/<dataset> under the current directory."""
    return Path(config.data_path) if config.data_path else Path("dataset") / config.dataset


def locate_data(config: Config, names: Sequence[str], log: Callable[[str], None]) -> tuple[Path, str]:
    """The dataset's directory and file format (built first if it is a built-in dataset not built yet)."""
    directory = dataset_directory(config)
    if config.data_path is None and config.dataset in BUILTIN_DATASETS and config.data_format in ("auto", "plain"):
        ensure_builtin(config.dataset, directory, log)
    elif uses_catalogue(config):  # TextBox 2.0's copy, from the hub cache (textbox/data/catalogue.py)
        directory = catalogue.ensure(config.dataset, config.catalogue, config.cache_dir, log)
    data_format = detect_format(directory, names) if config.data_format == "auto" else config.data_format
    return directory, data_format


def uses_catalogue(config: Config) -> bool:
    """A catalogue entry is read from its archive when no local copy is given or present."""
    return (bool(config["catalogue"]) and config["data_path"] is None and config["data_format"] in ("auto", "plain")
            and not dataset_directory(config).exists())


@overload
def read_splits(config: Config, names: Sequence[str] = SPLITS, log: Callable[[str], None] = print,
                stream: Literal[False] = False) -> dict[str, Split]: ...


@overload
def read_splits(config: Config, names: Sequence[str], log: Callable[[str], None],
                stream: bool) -> dict[str, ReadSplit]: ...


def read_splits(config: Config, names: Sequence[str] = SPLITS, log: Callable[[str], None] = print,
                stream: bool = False) -> dict[str, Split] | dict[str, ReadSplit]:
    """Read the splits ``names``; valid/test targets may hold several references, train ones exactly one.

    ``stream``: the train split of plain data (without quick_test) is a ``StreamedSplit``, read from its files as it
    is needed (textbox.data.streamed: memory flat in corpus size); its lines are checked when read, where an
    in-memory split's are checked here. A built-in dataset is built first when its default directory
    (dataset/<name>) lacks it; a directory given as data_path is the user's and is only read.
    """
    directory, data_format = locate_data(config, names, log)
    splits: dict[str, ReadSplit] = {}
    for name in names:
        if stream and name == "train" and data_format == "plain" and config.quick_test is False:
            splits[name] = StreamedSplit.open(directory, name)
            continue
        if data_format in INSTRUCTION_FORMATS:
            split = _read_instructions(config, data_format, directory, name, log)
        else:
            split = _check(name, _read_raw(config, data_format, directory, name, log))
        if config.group_references and name != "train":
            split = group_references(split)
        splits[name] = _first_examples(split, config.quick_test)
    return splits


def _read_instructions(config: Config, data_format: str, directory: Path, name: str,
                       log: Callable[[str], None]) -> Split:
    """An alpaca or messages split (textbox.data.instructions), its file read through datasets' cache."""
    path = instruction_file(directory, name, data_format)
    cache_dir = Path(config.cache_dir) / "datasets" / _content_digest(path)
    with leases.exclusive(cache_dir.with_name(f"{cache_dir.name}{leases.LOCK_SUFFIX}")):  # see _cached_table
        table = _cached_table(path, "json", name, cache_dir, {}, log)
    if table.num_rows == 0:
        raise DataError(f"{path} has no rows")
    read = read_alpaca if data_format == "alpaca" else read_messages
    return read(path, name, table.to_list())


def read_source_only_splits(config: Config, names: Sequence[str],
                            log: Callable[[str], None] = print) -> dict[str, Split]:
    """The splits ``names`` from their sources alone (train.src, valid.src, test.src for plain text; the
    ``src_field`` column otherwise), each source its own target; quick_test applies as usual. What denoising
    pre-training (textbox.data.denoising) reads."""
    directory, data_format = locate_data(config, names, log)
    if data_format in INSTRUCTION_FORMATS:
        raise DataError(f"denoising pre-training reads sources alone, and data_format={data_format} holds "
                        f"instructions and their answers: give plain <split>.src files or a json/csv/parquet column")
    splits = {}
    for name in names:
        if data_format == "plain":
            path = Path(directory) / f"{name}.src"
            if not path.is_file():
                raise DataError(f"{path} does not exist; denoising pre-training reads {name}.src alone "
                                f"(train.src to train, valid.src to validate, test.src for a test loss; "
                                f"--do_valid=False / --do_test=False do without the last two)")
            sources = read_dataset_lines(path)
            origin = str(path)
            locate = lambda i, origin=origin: f"{origin}:{i + 1}"  # noqa: E731
        else:  # json/csv/parquet/hub: the source column stands in for the target column too
            raw = _read_raw(config.replace(tgt_field=config.src_field), data_format, directory, name, log)
            sources, locate, origin = list(raw.sources), raw.locate_source, f"the {config.src_field!r} column"
        for i, source in enumerate(sources):
            if not isinstance(source, str) or not source.strip():
                raise DataError(f"{locate(i)}: the source is empty or not text ({source!r:.60}); "
                                f"every line needs text")
        splits[name] = _first_examples(Split(name, list(sources), [[source] for source in sources]),
                                       config.quick_test)
        log(f"denoising pre-training: {name} from {origin}, each source its own target")
    return splits



def key_problems(config: Config) -> list[str]:
    """Data keys set (away from their defaults) that the dataset's format would not read: refused before anything
    runs, as a setting given must be honoured (--hub_name without --data_format=hub trained on another dataset)."""
    given = [key for key in (*COLUMN_KEYS, *HUB_KEYS) if config[key] != DEFAULTS[key]]
    if not given or config["data_format"] == "hub":
        return []
    read_here = ("split_names", *COLUMN_KEYS) if config["data_format"] == "disk" else ()
    problems = [f"{config.where(key)} is read from hub datasets only (data_format=hub), but data_format is "
                f"{config['data_format']}: set --data_format=hub or remove {key}" for key in given
                if key in HUB_KEYS and key not in read_here]
    columns = [key for key in given if key in COLUMN_KEYS]
    if columns and config["data_format"] in INSTRUCTION_FORMATS:
        fields = "instruction, input and output" if config["data_format"] == "alpaca" else "messages"
        problems += [f"{config.where(key)} names a column, but data_format={config['data_format']} reads its fixed "
                     f"fields ({fields}): remove {key}" for key in columns]
    elif columns and _resolved_format(config) == "plain":
        problems += [f"{config.where(key)} names a column of json/jsonl/csv/parquet/hub data, but "
                     f"{dataset_directory(config)} holds plain files (<split>.src and <split>.tgt: one source or "
                     f"target per line, no columns): remove {key}" for key in columns]
    return problems


def _resolved_format(config: Config) -> str | None:
    """The format read_splits will read (None where it cannot tell yet: the directory's own check names it)."""
    if config["data_format"] != "auto":
        return config["data_format"]
    if config["data_path"] is None and config["dataset"] in BUILTIN_DATASETS or uses_catalogue(config):
        return "plain"
    try:
        return detect_format(dataset_directory(config), SPLITS)
    except DataError:
        return None


def detect_format(directory: Path, names: Sequence[str]) -> str:
    """plain if train.src or test.src exists, else the first tabular format with a file for one of ``names``."""
    if not directory.is_dir():
        raise DataError(f"dataset directory {directory} does not exist; set --data_path=<directory> or --dataset")
    if any((directory / f"{name}.src").is_file() for name in ("train", "test")):
        return "plain"
    if (directory / "dataset_dict.json").is_file():
        return "disk"  # written by DatasetDict.save_to_disk
    for extension in TABULAR_BUILDERS:
        if any((directory / f"{name}.{extension}").is_file() for name in names):
            return extension
    looked_for = ", ".join(f"{{{','.join(names)}}}.{extension}" for extension in TABULAR_BUILDERS)
    raise DataError(f"no dataset files in {directory}: looked for train.src or test.src (plain), then {looked_for}; "
                    f"add the files or set --data_format")


def group_references(split: Split) -> Split:
    """Merge runs of consecutive examples with the same source into one example with all their references."""
    sources: list[str] = []
    targets: list[list[str]] = []
    for source, references in zip(split.sources, split.targets):
        if sources and sources[-1] == source:
            targets[-1].extend(references)
        else:
            sources.append(source)
            targets.append(list(references))
    return Split(split.name, sources, targets)


def _first_examples(split: Split, quick_test: bool | int) -> Split:
    if quick_test is False:
        return split
    return split.first(QUICK_TEST_EXAMPLES if quick_test is True else quick_test)


def _read_raw(config: Config, data_format: str, directory: Path, name: str,
              log: Callable[[str], None] = print) -> RawSplit:
    if data_format == "plain":
        return _read_plain(directory, name)
    if data_format == "hub":
        return read_hub(config, name)
    if data_format == "disk":
        return read_disk(config, directory, name)
    return _read_tabular(config, directory / f"{name}.{data_format}", TABULAR_BUILDERS[data_format], name, log)


def _read_plain(directory: Path, name: str) -> RawSplit:
    source_path, target_path = directory / f"{name}.src", directory / f"{name}.tgt"
    sources, targets = read_dataset_lines(source_path), read_dataset_lines(target_path)
    same_line_counts(source_path, len(sources), target_path, len(targets))
    return RawSplit(sources, targets, lambda i: f"{source_path}:{i + 1}", lambda i: f"{target_path}:{i + 1}")


def read_dataset_lines(path: Path) -> list[str]:
    """A plain dataset file's lines (``read_lines``); a missing or empty file is an error naming it."""
    return read_lines(dataset_file(path))


def _read_tabular(config: Config, path: Path, builder: str, name: str, log: Callable[[str], None]) -> RawSplit:
    if not path.is_file():
        raise DataError(f"{path} does not exist; the {name} split of a {path.suffix[1:]} dataset is read from it")
    if path.stat().st_size == 0:
        raise DataError(f"{path} is empty")
    options: dict[str, object] = {}
    if builder == "csv":  # keep cells as written: "007" stays text and "NA" is not a missing value
        options = {"keep_default_na": False, "converters": {config.src_field: str, config.tgt_field: str}}
    # datasets' own cache knows a local file by its modification time alone, so a file replaced with the same
    # time (cp -p, rsync -t, an unpacked archive, a coarse file-system clock) would give the old rows back: the
    # cache directory is named after the file's content instead.
    cache_dir = Path(config.cache_dir) / "datasets" / _content_digest(path)
    with leases.exclusive(cache_dir.with_name(f"{cache_dir.name}{leases.LOCK_SUFFIX}")):  # see _cached_table
        table = _cached_table(path, builder, name, cache_dir, options, log)
    return columns(table, str(path), config)


def _cached_table(path: Path, builder: str, name: str, cache_dir: Path, options: dict[str, object],
                  log: Callable[[str], None]) -> datasets.Dataset:
    """The file's table, from datasets' cache of it in ``cache_dir`` (checked against the checksums recorded when it
    was written: a damaged one, a table cut short or overwritten, an OSError or UnicodeDecodeError traceback before,
    is named and the file read again). Called under the entry's lock: its record is written after datasets' tables,
    and another process must not take an entry being written for one without its record."""
    import datasets
    import pyarrow

    if cache_dir.is_dir():
        damage = checksums.damage_of(cache_dir, TABLES_RECORD)
        if damage is not None:
            log(f"the datasets cache {cache_dir} of {path} is damaged ({damage}); reading {path} again")
            _remove(cache_dir)
    # A file damaged where datasets reads it before generating rows (a parquet file cut short has no footer; a
    # jsonl file cut mid-row fails the schema's inference) fails with pyarrow's ArrowInvalid or a plain ValueError
    # rather than DatasetGenerationError: the file exists and is not empty, and its cache was checked, so those
    # too are its content.
    try:
        table = datasets.load_dataset(builder, data_files={name: str(path)}, split=name, cache_dir=str(cache_dir),
                                      **options)
    except (datasets.exceptions.DatasetGenerationError, pyarrow.ArrowException, ValueError) as error:
        raise DataError(f"{path} cannot be read as {path.suffix[1:]} ({error.__cause__ or error}); the file is "
                        f"damaged or not {path.suffix[1:]}: write it again (or restore a copy)") from error
    if not (cache_dir / TABLES_RECORD).is_file():
        checksums.write_record(cache_dir, TABLES_RECORD, suffixes=(".arrow", ".json"))
    return table


def _remove(directory: Path) -> None:
    """Take ``directory`` away at once (a rename: another process never finds half of it), then delete it."""
    gone = directory.with_name(f".{directory.name}.damaged-{os.getpid()}")
    try:
        os.rename(directory, gone)
    except OSError:  # another process took it away first
        return
    shutil.rmtree(gone, ignore_errors=True)


def _content_digest(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()[:32]


def _check(name: str, raw: RawSplit) -> Split:
    """Non-empty text sources, one or more non-empty references; train keeps only the first reference."""
    sources: list[str] = []
    targets: list[list[str]] = []
    for i, (source, target) in enumerate(zip(raw.sources, raw.targets)):
        if not isinstance(source, str) or not source.strip():
            raise empty_source(source, raw.locate_source(i))
        found = target_references(target, raw.locate_target(i))
        sources.append(source)
        targets.append(found[:1] if name == "train" else found)
    return Split(name, sources, targets)
