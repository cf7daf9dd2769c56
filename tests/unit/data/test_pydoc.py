"""The pydoc builder on a tiny fake standard library: rules, split by module, determinism."""
from __future__ import annotations

import ast
import hashlib

import pytest

from textbox.data.pydoc import NEWLINE, build, collect_pairs, first_sentence, module_files, split_of


def read(directory, name):
    return (directory / name).read_text(encoding="utf-8").splitlines()


def test_pairs_follow_the_rules(fake_stdlib):
    pairs, unparsable = collect_pairs(fake_stdlib)
    assert unparsable == 1  # broken.py
    assert [(p.module, p.target) for p in pairs] == [
        ("numbers", "Return the sum of a and b."),
        ("numbers", "Increase the counter by step."),
        ("omega", "Fetch the page at url."),
        ("strings", "Upper-case the text and add an exclamation mark."),
    ]
    assert pairs[0].source == f"def add(a, b):{NEWLINE}    total = a + b{NEWLINE}    return total"
    assert pairs[1].source == f"def increment(self, step=1):{NEWLINE}    self.value += step{NEWLINE}    return self.value"
    assert pairs[2].source.startswith("async def fetch(url):")


def test_sources_round_trip_to_the_code_without_its_docstring(fake_stdlib):
    pairs, _ = collect_pairs(fake_stdlib)
    code = pairs[3].source.replace(NEWLINE, "\n")
    function = ast.parse(code).body[0]
    assert ast.get_docstring(function) is None
    assert code == "def shout(text):\n    return text.upper() + '!'"


def test_module_names_and_skipped_directories(fake_stdlib):
    names = [name for name, _ in module_files(fake_stdlib)]
    assert names == ["broken", "numbers", "omega", "strings", "pkg", "pkg.sub"]


@pytest.mark.parametrize("docstring, sentence", [
    ("Return x. Then y.", "Return x."),
    ("Spread over\n   two lines\n\nNext paragraph. More.", "Spread over two lines"),
    ("No full stop at the end", "No full stop at the end"),
    ("Ends with a stop.", "Ends with a stop."),
])
def test_first_sentence(docstring, sentence):
    assert first_sentence(docstring) == sentence


def test_split_of_uses_the_md5_of_the_module_name():
    for module in ("numbers", "omega", "strings", "os.path", "json.decoder"):
        bucket = int(hashlib.md5(module.encode()).hexdigest(), 16) % 10
        assert split_of(module) == {0: "test", 1: "valid"}.get(bucket, "train")
    assert [split_of(m) for m in ("numbers", "omega", "strings")] == ["train", "valid", "test"]


def test_build_writes_aligned_files_and_is_deterministic(fake_stdlib, tmp_path):
    messages: list[str] = []
    first, second = tmp_path / "first", tmp_path / "second"
    for directory in (first, second):
        directory.mkdir()
        build(directory, messages.append, stdlib_root=fake_stdlib)
    assert read(first, "train.tgt") == ["Return the sum of a and b.", "Increase the counter by step."]
    assert read(first, "valid.tgt") == ["Fetch the page at url."]
    assert read(first, "test.src") == [f"def shout(text):{NEWLINE}    return text.upper() + '!'"]
    for name in ("train.src", "train.tgt", "valid.src", "valid.tgt", "test.src", "test.tgt", "README.txt"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    assert "train 2, valid 1, test 1" in (first / "README.txt").read_text()
    assert messages[0].startswith("pydoc: train 2, valid 1, test 1 pairs from ")
