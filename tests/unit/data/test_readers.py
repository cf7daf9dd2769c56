"""Reading splits: plain and tabular formats, multi-reference targets, grouping, quick_test, every error."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import pandas
import pytest

import textbox.data.pydoc
from textbox.config.errors import DataError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.readers import read_splits


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path, monkeypatch):
    """The default cache_dir (.cache/textbox, which tabular reads use) is relative: keep it out of the checkout."""
    monkeypatch.chdir(tmp_path)


def make_config(**changes) -> Config:
    return Config({**DEFAULTS, **changes})


def write_plain(directory: Path, split: str, sources: str | bytes, targets: str | bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for suffix, content in (("src", sources), ("tgt", targets)):
        path = directory / f"{split}.{suffix}"
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content, encoding="utf-8")


def test_plain_splits_with_multi_reference_literals(tmp_path):
    write_plain(tmp_path, "train", "a b\nc d\n", "['first', 'second']\nx y\n")
    write_plain(tmp_path, "valid", "s1\r\ns2\r\n", "['r1 a', 'r1 b']\r\n[laughs] then talks\r\n")
    splits = read_splits(make_config(data_path=str(tmp_path)), ("train", "valid"))
    assert splits["train"].sources == ["a b", "c d"]
    assert splits["train"].targets == [["first"], ["x y"]]
    assert splits["valid"].sources == ["s1", "s2"]
    assert splits["valid"].targets == [["r1 a", "r1 b"], ["[laughs] then talks"]]


def test_only_the_line_end_is_stripped(tmp_path):
    write_plain(tmp_path, "test", "  padded source \t\nlast line without newline", "t1\nt2")
    split = read_splits(make_config(data_path=str(tmp_path)), ("test",))["test"]
    assert split.sources == ["  padded source \t", "last line without newline"]
    assert split.targets == [["t1"], ["t2"]]


def test_group_references_merges_consecutive_runs_outside_train(tmp_path):
    for split in ("train", "test"):
        write_plain(tmp_path, split, "dog run\ndog run\ncat sit\ndog run\n", "d1\nd2\nc1\nd3\n")
    splits = read_splits(make_config(data_path=str(tmp_path), group_references=True), ("train", "test"))
    assert splits["test"].sources == ["dog run", "cat sit", "dog run"]
    assert splits["test"].targets == [["d1", "d2"], ["c1"], ["d3"]]
    assert len(splits["train"]) == 4


@pytest.mark.parametrize("quick_test, expected", [(True, 32), (3, 3), (False, 40)])
def test_quick_test_keeps_the_first_examples(tmp_path, quick_test, expected):
    lines = "".join(f"line {i}\n" for i in range(40))
    write_plain(tmp_path, "train", lines, lines)
    split = read_splits(make_config(data_path=str(tmp_path), quick_test=quick_test), ("train",))["train"]
    assert len(split) == expected
    assert split.sources[-1] == f"line {expected - 1}"


def test_missing_file_is_named(tmp_path):
    write_plain(tmp_path, "train", "a\n", "b\n")
    with pytest.raises(DataError, match=r"valid\.src does not exist"):
        read_splits(make_config(data_path=str(tmp_path)), ("train", "valid"))


def test_empty_file_is_named(tmp_path):
    write_plain(tmp_path, "train", "a\n", "")
    with pytest.raises(DataError, match=r"train\.tgt is empty"):
        read_splits(make_config(data_path=str(tmp_path)), ("train",))


def test_line_count_mismatch_gives_both_counts(tmp_path):
    write_plain(tmp_path, "train", "a\nb\nc\n", "x\ny\n")
    with pytest.raises(DataError, match=r"train\.src has 3 lines but .*train\.tgt has 2"):
        read_splits(make_config(data_path=str(tmp_path)), ("train",))


def test_undecodable_bytes_name_file_and_line(tmp_path):
    write_plain(tmp_path, "train", "fine\nalso fine\nbad \xff byte\n".encode("latin-1"), "a\nb\nc\n")
    with pytest.raises(DataError, match=r"train\.src:3: bytes b'\\xff' are not UTF-8"):
        read_splits(make_config(data_path=str(tmp_path)), ("train",))


@pytest.mark.parametrize("sources, targets, where", [
    ("a\n\nc\n", "x\ny\nz\n", r"train\.src:2: the source is empty"),
    ("a\nb\nc\n", "x\ny\n  \n", r"train\.tgt:3: the target is empty"),
    ("a\n", "['ok', '']\n", r"train\.tgt:1: the target is empty"),
])
def test_empty_lines_name_file_and_line(tmp_path, sources, targets, where):
    write_plain(tmp_path, "train", sources, targets)
    with pytest.raises(DataError, match=where):
        read_splits(make_config(data_path=str(tmp_path)), ("train",))


def test_auto_format_without_files_lists_what_it_looked_for(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(DataError, match=r"looked for train\.src or test\.src \(plain\), then \{test\}\.json"):
        read_splits(make_config(data_path=str(tmp_path)), ("test",))


def test_missing_directory_is_named(tmp_path):
    with pytest.raises(DataError, match=r"dataset directory .*nowhere does not exist"):
        read_splits(make_config(data_path=str(tmp_path / "nowhere")), ("test",))


RECORDS = [{"src": "first source", "tgt": "one"}, {"src": "second source", "tgt": ["two a", "two b"]}]


def write_tabular(path: Path, extension: str, records: list[dict]) -> None:
    if extension == "json":
        path.write_text(json.dumps(records))
    elif extension == "jsonl":
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
    elif extension == "csv":
        flat = [{**r, "tgt": repr(r["tgt"]) if isinstance(r["tgt"], list) else r["tgt"]} for r in records]
        pandas.DataFrame(flat).to_csv(path, index=False)
    else:
        pandas.DataFrame([{**r, "tgt": r["tgt"] if isinstance(r["tgt"], list) else [r["tgt"]]} for r in records]
                         ).to_parquet(path)


@pytest.mark.parametrize("extension", ["json", "jsonl", "csv", "parquet"])
@pytest.mark.parametrize("data_format", ["auto", "explicit"])
def test_tabular_round_trip(tmp_path, extension, data_format):
    for split in ("train", "valid"):
        write_tabular(tmp_path / f"{split}.{extension}", extension, RECORDS)
    config = make_config(data_path=str(tmp_path), data_format=extension if data_format == "explicit" else "auto")
    splits = read_splits(config, ("train", "valid"))
    assert splits["valid"].sources == ["first source", "second source"]
    assert splits["valid"].targets == [["one"], ["two a", "two b"]]
    assert splits["train"].targets == [["one"], ["two a"]]


def test_tabular_fields_are_configurable(tmp_path):
    (tmp_path / "test.jsonl").write_text(json.dumps({"dialogue": "hi there", "summary": "greeting"}) + "\n")
    config = make_config(data_path=str(tmp_path), src_field="dialogue", tgt_field="summary")
    assert read_splits(config, ("test",))["test"].targets == [["greeting"]]


def test_csv_cells_stay_text(tmp_path):
    (tmp_path / "test.csv").write_text("src,tgt\n007,NA\n2,1.50\n")
    split = read_splits(make_config(data_path=str(tmp_path)), ("test",))["test"]
    assert split.sources == ["007", "2"]
    assert split.targets == [["NA"], ["1.50"]]


def test_tabular_missing_column_lists_columns(tmp_path):
    (tmp_path / "test.jsonl").write_text(json.dumps({"text": "a", "tgt": "b"}) + "\n")
    with pytest.raises(DataError, match=r"test\.jsonl has no column 'src' \(columns: text, tgt\); set --src_field"):
        read_splits(make_config(data_path=str(tmp_path)), ("test",))


def test_tabular_empty_value_names_row(tmp_path):
    write_tabular(tmp_path / "test.jsonl", "jsonl", [{"src": "a", "tgt": "b"}, {"src": "c", "tgt": ""}])
    with pytest.raises(DataError, match=r"test\.jsonl row 2 \(tgt\): the target is empty"):
        read_splits(make_config(data_path=str(tmp_path)), ("test",))


def test_tabular_empty_and_malformed_files(tmp_path):
    (tmp_path / "test.jsonl").write_text("")
    with pytest.raises(DataError, match=r"test\.jsonl is empty"):
        read_splits(make_config(data_path=str(tmp_path)), ("test",))
    (tmp_path / "test.jsonl").write_text('{"src": "a", "tgt": \n')
    with pytest.raises(DataError, match=r"test\.jsonl cannot be read as jsonl"):
        read_splits(make_config(data_path=str(tmp_path)), ("test",))


def test_hub_offline_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    config = make_config(data_format="hub", hub_name="no-such-user/no-such-dataset")
    with pytest.raises(DataError, match=r"cannot load split 'test' of hub dataset 'no-such-user/no-such-dataset'"):
        read_splits(config, ("test",))


def test_builtin_dataset_is_built_in_its_default_directory(tmp_path, monkeypatch, fake_roots):
    monkeypatch.setattr(textbox.data.pydoc, "build", functools.partial(textbox.data.pydoc.build, roots=fake_roots))
    monkeypatch.chdir(tmp_path)
    messages: list[str] = []
    splits = read_splits(make_config(dataset="pydoc"), log=messages.append)
    assert (tmp_path / "dataset" / "pydoc" / "train.src").is_file()
    assert {name: len(split) for name, split in splits.items()} == {"train": 5, "valid": 1, "test": 1}
    assert messages[0] == "building the built-in dataset 'pydoc' in dataset/pydoc"


# --- the one line reader: dataset files, --input_file and textbox.evaluate read alike ---------------------------
def test_read_lines_drops_line_ends_keeps_blank_lines_and_adds_no_final_empty_line(tmp_path):
    from textbox.data.readers import read_lines

    path = tmp_path / "lines.txt"
    path.write_bytes(b"one\r\n\n three \nlast")
    assert read_lines(path) == ["one", "", " three ", "last"]
    path.write_bytes(b"one\n")
    assert read_lines(str(path)) == ["one"]
    path.write_bytes(b"")
    assert read_lines(path) == []


def test_read_lines_reads_stdin_for_a_dash_and_names_undecodable_lines(tmp_path, monkeypatch):
    import io
    import sys

    from textbox.data.readers import read_lines

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a\r\nb\n")))
    assert read_lines("-") == ["a", "b"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"ok\n\xff\n")))
    with pytest.raises(DataError, match=r"stdin:2: bytes b'\\xff' are not UTF-8"):
        read_lines("-")


def test_a_byte_order_mark_is_not_text(tmp_path, monkeypatch):
    """Files saved with a UTF-8 byte-order mark: the mark is neither in the first source nor in the first reference
    (a list literal after it still gives several references), stdin and undecodable-line numbers included."""
    import io
    import sys

    from textbox.data.readers import read_lines

    bom = b"\xef\xbb\xbf"
    write_plain(tmp_path, "test", bom + b"a b\nc d\n", bom + b"['x', 'y']\nz\n")
    split = read_splits(make_config(data_path=str(tmp_path)), ("test",))["test"]
    assert split.sources == ["a b", "c d"]
    assert split.targets == [["x", "y"], ["z"]]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(bom + b"a\r\nb\n")))
    assert read_lines("-") == ["a", "b"]
    (tmp_path / "bad.txt").write_bytes(bom + b"fine\n\xff\n")
    with pytest.raises(DataError, match=r"bad\.txt:2: bytes b'\\xff' are not UTF-8"):
        read_lines(tmp_path / "bad.txt")


@pytest.mark.parametrize("extension", ["json", "jsonl", "csv"])
def test_tabular_files_with_a_byte_order_mark(tmp_path, extension):
    """The datasets readers skip the mark (a guard: the first column name or value must not carry it)."""
    write_tabular(tmp_path / f"test.{extension}", extension, RECORDS)
    path = tmp_path / f"test.{extension}"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    split = read_splits(make_config(data_path=str(tmp_path)), ("test",))["test"]
    assert split.sources == ["first source", "second source"]
    assert split.targets == [["one"], ["two a", "two b"]]


@pytest.mark.parametrize("setting, message", [
    ("--hub_name=knkarthick/samsum", r"--hub_name is read from hub datasets only \(data_format=hub\), but "
                                     r"data_format is auto: set --data_format=hub or remove hub_name"),
    ("--hub_subset=en", r"--hub_subset is read from hub datasets only"),
    ("--split_names={'train': 'train', 'valid': 'dev', 'test': 'test'}", r"--split_names is read from hub"),
    ("--src_field=dialogue", r"--src_field names a column of json/jsonl/csv/parquet/hub data, but .* holds plain "
                             r"files .*: remove src_field"),
    ("--tgt_field=summary", r"--tgt_field names a column"),
])
def test_data_keys_that_the_format_would_not_read_are_refused(tmp_path, setting, message):
    """They were ignored without a word: --hub_name without --data_format=hub read the local files instead."""
    from textbox.checks import load_checked_config
    from textbox.config.errors import ConfigError

    write_plain(tmp_path, "train", "a\n", "b\n")
    with pytest.raises(ConfigError, match=message):
        load_checked_config([f"--data_path={tmp_path}", setting])


def test_data_keys_are_accepted_where_the_format_reads_them(tmp_path):
    from textbox.checks import load_checked_config

    (tmp_path / "test.jsonl").write_text(json.dumps({"dialogue": "hi there", "summary": "greeting"}) + "\n")
    config = load_checked_config([f"--data_path={tmp_path}", "--src_field=dialogue", "--tgt_field=summary"])
    assert read_splits(config, ("test",))["test"].targets == [["greeting"]]
    load_checked_config(["--data_format=hub", "--hub_name=user/set", "--hub_subset=en", "--src_field=dialogue",
                         "--split_names={'train': 'train', 'valid': 'dev', 'test': 'test'}"])


@pytest.mark.parametrize("extension", ["jsonl", "csv", "parquet"])
def test_an_edited_tabular_file_is_read_again(tmp_path, monkeypatch, extension):
    """datasets' own cache knows a local file by its modification time alone: a file replaced by another with the
    same time (cp -p, rsync -t, an unpacked archive, a coarse-clock file system) gave the old examples."""
    import os

    path = tmp_path / "data" / f"test.{extension}"
    path.parent.mkdir()
    write_tabular(path, extension, RECORDS)
    stamp = path.stat().st_mtime_ns
    config = make_config(data_path=str(path.parent))
    assert read_splits(config, ("test",))["test"].sources == ["first source", "second source"]
    write_tabular(path, extension, [{**record, "src": record["src"].upper()} for record in RECORDS])
    os.utime(path, ns=(stamp, stamp))
    assert read_splits(config, ("test",))["test"].sources == ["FIRST SOURCE", "SECOND SOURCE"]


# --- save_to_disk folders and a catalogue entry's original hub dataset ------------------------------------------
def _saved_translation(path: Path) -> Path:
    """A tiny DatasetDict as datasets.load_dataset('wmt/wmt16', 'de-en') returns it, saved with save_to_disk."""
    import datasets

    rows = {"train": [("ein hund", "a dog"), ("eine katze", "a cat")], "validation": [("ein haus", "a house")],
            "test": [("zwei hunde", "two dogs")]}
    datasets.DatasetDict({split: datasets.Dataset.from_dict({"translation": [{"de": de, "en": en} for de, en in pairs]})
                          for split, pairs in rows.items()}).save_to_disk(str(path))
    return path


def test_a_save_to_disk_folder_is_read_with_its_split_names_and_dict_fields(tmp_path):
    folder = _saved_translation(tmp_path / "wmt16-de-en")
    config = make_config(data_path=str(folder), src_field="translation.de", tgt_field="translation.en")
    splits = read_splits(config)  # data_format=auto: the folder's dataset_dict.json says disk
    assert splits["train"].sources == ["ein hund", "eine katze"] and splits["train"].targets == [["a dog"], ["a cat"]]
    assert (splits["valid"].sources, splits["test"].targets) == (["ein haus"], [["two dogs"]])
    swapped = read_splits(config.replace(data_format="disk", src_field="translation.en", tgt_field="translation.de"),
                          ("test",))
    assert swapped["test"].sources == ["two dogs"]
    with pytest.raises(DataError, match=r"has no split 'dev' \(it has train, validation, test\)"):
        read_splits(config.replace(split_names={"train": "train", "valid": "dev", "test": "test"}), ("valid",))
    with pytest.raises(DataError, match=r"column 'translation' holds no 'fr' entry"):
        read_splits(config.replace(src_field="translation.fr"), ("test",))


def test_disk_format_needs_a_save_to_disk_folder(tmp_path):
    write_plain(tmp_path, "train", "a\n", "b\n")
    with pytest.raises(DataError, match="holds no dataset_dict.json: data_format=disk reads a folder written by"):
        read_splits(make_config(data_path=str(tmp_path), data_format="disk"), ("train",))


def test_a_catalogue_entry_reads_its_original_hub_dataset_with_its_fields(monkeypatch):
    """--dataset=samsum --data_format=hub: the entry's original dataset, its splits and fields; keys given win."""
    from textbox.data.tables import hub_settings

    original = {"hub": "Samsung/samsum", "splits": {"train": "train", "valid": "validation", "test": "test"},
                "source": "dialogue", "target": "summary", "licence": "CC BY-NC-ND 4.0"}
    values = {**DEFAULTS, "dataset": "samsum", "data_format": "hub",
              "catalogue": {"repo": "RUCAIBox/Summarization", "file": "samsum.tgz", "original": original}}
    config = Config(values, {key: "default" for key in DEFAULTS} | {"catalogue": "samsum.yaml",
                                                                    "data_format": "command line"})
    assert hub_settings(config) == {"hub_name": "Samsung/samsum", "hub_subset": None,
                                    "split_names": original["splits"], "src_field": "dialogue",
                                    "tgt_field": "summary"}
    given = Config({**values, "tgt_field": "id"}, {**{key: "default" for key in DEFAULTS}, "tgt_field": "command line"})
    assert hub_settings(given)["tgt_field"] == "id"
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DataError, match=r"cannot load split 'validation' of hub dataset 'Samsung/samsum'"):
        read_splits(config, ("valid",))


def test_data_format_hub_with_a_catalogue_dataset_needs_no_hub_name_where_it_names_an_original():
    from textbox.checks import load_checked_config
    from textbox.config import ConfigError

    assert load_checked_config(["--dataset=samsum", "--data_format=hub"]).catalogue["original"]["hub"] == \
        "Samsung/samsum"
    with pytest.raises(ConfigError, match="the catalogue entry 'squad' names no original hub dataset"):
        load_checked_config(["--dataset=squad", "--data_format=hub"])


@pytest.mark.parametrize("extension", ["json", "jsonl", "csv", "parquet"])
@pytest.mark.parametrize("damage", ["cut short", "not this format"])
def test_a_damaged_tabular_file_is_a_data_error_naming_it(tmp_path, extension, damage):
    """A parquet file cut short (a copy interrupted, a full disk) has no footer: pyarrow's ArrowInvalid escaped the
    readers, which caught only datasets' DatasetGenerationError, as a traceback. Every format's damaged file is a
    DataError naming the file and what to do."""
    path = tmp_path / "data" / f"test.{extension}"
    path.parent.mkdir()
    write_tabular(path, extension, RECORDS * 20)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2 + 3] if damage == "cut short" else bytes(range(256)) * 4)
    config = make_config(data_path=str(path.parent), cache_dir=str(tmp_path / "cache"))
    try:
        read_splits(config, ("test",))
    except DataError as error:
        assert f"{path} cannot be read as {extension}" in str(error)
    else:  # jsonl/csv rows cut at a row's end are rows: only a format that cannot be cut there must fail
        assert damage == "cut short" and extension in ("jsonl", "csv")


@pytest.mark.parametrize("extension", ["jsonl", "parquet"])
@pytest.mark.parametrize("damage", ["cut short", "overwritten"])
def test_a_damaged_datasets_cache_of_a_file_is_read_again(tmp_path, extension, damage):
    """datasets keeps its tables of a json/csv/parquet file under <cache_dir>/datasets/<digest>: one cut short or
    overwritten in place stopped every later run with an OSError or UnicodeDecodeError traceback (or gave other
    rows). Its checksums, recorded when it is written, are checked when it is read: the cache is named and the file
    read again; an intact cache is read as it is."""
    path = tmp_path / "data" / f"test.{extension}"
    path.parent.mkdir()
    write_tabular(path, extension, RECORDS * 20)
    config = make_config(data_path=str(path.parent), cache_dir=str(tmp_path / "cache"))
    messages: list[str] = []
    expected = read_splits(config, ("test",), log=messages.append)["test"]
    assert read_splits(config, ("test",), log=messages.append)["test"] == expected and messages == []
    (table,) = (tmp_path / "cache" / "datasets").rglob("*.arrow")
    data = table.read_bytes()
    table.write_bytes(data[:len(data) // 2] if damage == "cut short"
                      else data[:-300] + bytes(byte ^ 0xff for byte in data[-300:-292]) + data[-292:])
    assert read_splits(config, ("test",), log=messages.append)["test"] == expected
    (message,) = messages
    assert message.startswith(f"the datasets cache {tmp_path / 'cache' / 'datasets'}/") and " is damaged (" in message
    assert message.endswith(f"reading {path} again")
    assert read_splits(config, ("test",), log=messages.append)["test"] == expected and len(messages) == 1


def test_a_datasets_cache_another_process_is_writing_is_waited_for_not_taken_for_damaged(tmp_path):
    """Study workers and the ranks of a run read the same file into one cache: the record of datasets' tables is
    written after them, so a process finding the tables without it must wait for the writer (the entry's lock), not
    remove them as damaged under it. The other process is played by a lock taken here on a file opened anew (flock
    locks of two open files conflict as two processes' do)."""
    import threading

    from textbox.data.readers import TABLES_RECORD
    from textbox.utils import checksums, leases

    path = tmp_path / "data" / "test.jsonl"
    path.parent.mkdir()
    write_tabular(path, "jsonl", RECORDS)
    config = make_config(data_path=str(path.parent), cache_dir=str(tmp_path / "cache"))
    expected = read_splits(config, ("test",), log=print)["test"]
    (entry,) = [found for found in (tmp_path / "cache" / "datasets").iterdir() if found.is_dir()]
    messages: list[str] = []
    with leases.exclusive(entry.with_name(f"{entry.name}.lock")):  # the other process, writing the entry
        (entry / TABLES_RECORD).unlink()
        reader = threading.Thread(target=lambda: messages.append(read_splits(config, ("test",), log=messages.append)))
        reader.start()
        reader.join(timeout=1.0)
        assert reader.is_alive() and entry.is_dir()  # waiting, the tables left alone
        checksums.write_record(entry, TABLES_RECORD, suffixes=(".arrow", ".json"))  # the writer finishes
    reader.join(timeout=60)
    assert messages == [{"test": expected}]
