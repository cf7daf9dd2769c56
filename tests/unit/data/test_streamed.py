"""A streamed plain train split (textbox.data.streamed): the ids and the tokenizer of the in-memory path, the same
errors naming file:line, a cached rerun that reads no line, memory flat in corpus size."""
from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from textbox.config.errors import DataError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data import streamed
from textbox.data.readers import read_splits
from textbox.data.split import Split
from textbox.data.streamed import StreamedSplit
from textbox.data.tokenize import tokenize_splits
from textbox.model.tokenizer import split_tokenizer, train_bpe_tokenizer
from tests.unit.data.test_tokenize import bpe_tokenizer, word_tokenizer

WORDS = "a b c d e f x y".split()


def config(data: Path, cache: Path, **changes: object) -> Config:
    return Config({**DEFAULTS, "data_path": str(data), "cache_dir": str(cache), **changes})


def write_pairs(directory: Path, count: int) -> Path:
    """``count`` pairs of a few words each (varied, so that a BPE has merges to learn), in plain files."""
    directory.mkdir(parents=True, exist_ok=True)
    words = [" ".join(WORDS[(i * 7 + k) % 8] for k in range(1 + i % 5)) for i in range(count)]
    (directory / "train.src").write_text("".join(f"{text}\n" for text in words), encoding="utf-8")
    (directory / "train.tgt").write_text("".join(f"{text} x\n" for text in reversed(words)), encoding="utf-8")
    return directory


def both(data: Path, cache: Path) -> tuple[Split, StreamedSplit]:
    in_memory = read_splits(config(data, cache), ["train"], print, stream=False)["train"]
    found = read_splits(config(data, cache), ["train"], print, stream=True)["train"]
    assert isinstance(in_memory, Split) and isinstance(found, StreamedSplit)
    return in_memory, found


def test_a_streamed_split_reads_and_tokenises_as_the_in_memory_split(tmp_path):
    """BOM, \\r\\n, a reference list (its first reference kept), no final line end: the same examples; over several
    chunks the same ids (and the streamed entry is loaded on a rerun)."""
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "train.src").write_bytes(b"\xef\xbb\xbfa b\r\nc d\n e \t")
    (odd / "train.tgt").write_bytes(b"\xef\xbb\xbf['x', 'y']\r\nz\nw")
    in_memory, found = both(odd, tmp_path / "cache")
    assert found.materialised() == in_memory and found.first(2) == in_memory.first(2)
    assert list(found.chunks(2)) == [(["a b", "c d"], ["x", "z"]), ([" e \t"], ["w"])]
    assert list(found.tokenizer_texts()) == in_memory.tokenizer_texts()
    assert list(found.tokenizer_texts([1, 3, 5])) == in_memory.tokenizer_texts([1, 3, 5]) == ["c d", "x", "w"]

    in_memory, found = both(write_pairs(tmp_path / "data", 2300), tmp_path / "cache")  # 3 chunks of 1000
    tokenizer, logs = bpe_tokenizer("<s> $A </s>"), []
    expected = tokenize_splits(config(tmp_path, tmp_path / "one"), {"train": in_memory}, tokenizer, logs.append)
    got = tokenize_splits(config(tmp_path, tmp_path / "two"), {"train": found}, tokenizer, logs.append)
    assert got["train"]["input_ids"] == expected["train"]["input_ids"] and len(got["train"]) == 2300
    assert got["train"]["labels"] == expected["train"]["labels"]
    again = tokenize_splits(config(tmp_path, tmp_path / "two"), {"train": found}, tokenizer, logs.append)
    assert logs[-1].startswith("loaded tokenized train") and again["train"]["labels"] == expected["train"]["labels"]


@pytest.mark.parametrize("sample", [None, 300])
def test_a_streamed_split_trains_the_tokenizer_of_the_in_memory_split(tmp_path, sample):
    """The same texts drawn by position (tokenizer_train_sample, seeded), read from the files: the same BPE."""
    in_memory, found = both(write_pairs(tmp_path / "data", 400), tmp_path / "cache")
    settings = {"vocab_size": 300, "min_frequency": 1, "log": print, "sample": sample, "seed": 3}
    expected = train_bpe_tokenizer(in_memory.tokenizer_texts(), cache_dir=tmp_path / "one", **settings)
    got = split_tokenizer(found, cache_dir=tmp_path / "two", **settings)
    assert got.backend_tokenizer.to_str() == expected.backend_tokenizer.to_str()
    assert got.get_vocab() == expected.get_vocab() and len(got) > 260  # merges learnt beyond the bytes


@pytest.mark.parametrize("sources, targets, where", [
    (b"a\n\nc\n", b"x\ny\nz\n", r"train\.src:2: the source is empty"),
    (b"a\nb\nc\n", b"x\ny\n  \n", r"train\.tgt:3: the target is empty"),
    (b"a\n", b"['ok', '']\n", r"train\.tgt:1: the target is empty"),
    (b"fine\nalso fine\nbad \xff byte\n", b"a\nb\nc\n", r"train\.src:3: bytes b'\\xff' are not UTF-8"),
    (b"a\nb\n", b"x\r\ny\xe2\x82\r\n", r"train\.tgt:2: bytes b'\\xe2\\x82' are not UTF-8"),
])
def test_a_bad_line_of_a_streamed_split_is_the_error_naming_file_and_line(tmp_path, sources, targets, where):
    """Found on a first run before the first step: while the tokenizer is trained, or while tokenising."""
    (tmp_path / "train.src").write_bytes(sources)
    (tmp_path / "train.tgt").write_bytes(targets)
    found = read_splits(config(tmp_path, tmp_path / "cache"), ["train"], print, stream=True)["train"]
    assert isinstance(found, StreamedSplit)
    with pytest.raises(DataError, match=where):
        split_tokenizer(found, 300, 1, tmp_path / "cache", print)
    with pytest.raises(DataError, match=where):
        tokenize_splits(config(tmp_path, tmp_path / "cache"), {"train": found}, word_tokenizer(), print)
    with pytest.raises(DataError, match=where):  # the same error as the in-memory reader's
        read_splits(config(tmp_path, tmp_path / "cache"), ["train"])


@pytest.mark.parametrize("sources, targets, where", [
    (b"a\nb\nc\n", b"x\ny\n", r"train\.src has 3 lines but .*train\.tgt has 2"),
    (b"a\n", b"", r"train\.tgt is empty"),
    (b"a\n", None, r"train\.tgt does not exist"),
])
def test_a_streamed_split_with_files_that_do_not_pair_is_refused_when_read(tmp_path, sources, targets, where):
    (tmp_path / "train.src").write_bytes(sources)
    if targets is not None:
        (tmp_path / "train.tgt").write_bytes(targets)
    with pytest.raises(DataError, match=where):
        read_splits(config(tmp_path, tmp_path / "cache"), ["train"], print, stream=True)


def test_a_cached_rerun_reads_no_line_of_a_streamed_split(tmp_path, monkeypatch):
    """Its tokenizer and its tokenised entry are named after its files' digest: the second run loads both without
    reading the text; an edited file is another digest, read and tokenised again."""
    data = write_pairs(tmp_path / "data", 300)
    found = read_splits(config(data, tmp_path / "cache"), ["train"], print, stream=True)["train"]
    tokenizer = split_tokenizer(found, 300, 1, tmp_path / "cache", print, sample=200)
    first = tokenize_splits(config(data, tmp_path / "cache"), {"train": found}, tokenizer, print)["train"]

    def unread(path: Path):
        raise AssertionError(f"{path} was read")

    monkeypatch.setattr(streamed, "stream_lines", unread)
    logs: list[str] = []
    rerun = read_splits(config(data, tmp_path / "cache"), ["train"], print, stream=True)["train"]
    again = split_tokenizer(rerun, 300, 1, tmp_path / "cache", logs.append, sample=200)
    data_again = tokenize_splits(config(data, tmp_path / "cache"), {"train": rerun}, again, logs.append)["train"]
    assert logs[-2].startswith("loaded tokenizer from cache") and logs[-1].startswith("loaded tokenized train")
    assert data_again["input_ids"] == first["input_ids"]
    with (data / "train.tgt").open("a", encoding="utf-8") as handle, (data / "train.src").open("a") as sources:
        handle.write("one more\n")
        sources.write("one more\n")
    edited = read_splits(config(data, tmp_path / "cache"), ["train"], print, stream=True)["train"]
    with pytest.raises(AssertionError, match="was read"):
        tokenize_splits(config(data, tmp_path / "cache"), {"train": edited}, again, print)


def _peak(work) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_of_the_train_data_is_flat_in_corpus_size(tmp_path, monkeypatch):
    """Python's allocation peak of building the train data (reading the split, tokenising it on a first run, loading
    the memory-mapped entry on a rerun) at 10x the pairs stays within a small bound: nothing per example is held.
    (Files are read in chunks, a constant: small ones here, so that what grows with the corpus would show.)"""
    from textbox.data import lines
    from textbox.utils import checksums

    monkeypatch.setattr(lines, "_CHUNK", 1 << 14)
    monkeypatch.setattr(checksums, "_CHUNK", 1 << 14)
    tokenizer = word_tokenizer()
    peaks = {}
    for pairs in (100, 2_000, 20_000):  # the first (not compared) imports what a build imports
        data = write_pairs(tmp_path / f"data{pairs}", pairs)
        cache = tmp_path / f"cache{pairs}"

        def build() -> None:
            train = read_splits(config(data, cache), ["train"], print, stream=True)
            assert len(tokenize_splits(config(data, cache), train, tokenizer, lambda _: None)["train"]) == pairs

        peaks[pairs] = _peak(build), _peak(build)  # first run, cached rerun
    (first_small, rerun_small), (first_large, rerun_large) = peaks[2_000], peaks[20_000]
    # A first run holds a few chunks of 1,000 pairs (those tokenising reads ahead: ~130 kB each); 18k more examples
    # held as Python objects would take megabytes (their texts ~2 MB, a list of their ids alone 650 kB)
    assert first_large < first_small + 300_000 and rerun_large < rerun_small + 100_000, peaks
