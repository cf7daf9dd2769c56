"""The pydoc builder on a tiny fake standard library and package: rules, split by class, determinism."""
from __future__ import annotations

import ast
import hashlib

import pytest

from textbox.data.pydoc import (NEWLINE, PACKAGES, build, collect_pairs, default_roots, first_sentence,
                                heading, module_files, signature, split_of, summary, words)


def read(directory, name):
    return (directory / name).read_text(encoding="utf-8").splitlines()


def test_pairs_follow_the_rules(fake_roots):
    pairs, unparsable = collect_pairs(fake_roots)
    assert unparsable == 1  # broken.py
    assert [(p.group, p.target) for p in pairs] == [
        ("numbers:add", "Return the sum of a and b."),
        ("numbers:only_doc", "This function has only a docstring."),
        ("numbers:link", "Join os.path.join and a paths."),
        ("numbers:Counter", "Increase the counter by step."),
        ("numbers:Counter", "Set the counter back to zero."),
        ("strings:shout", "Upper-case the text and add an exclamation mark."),
        ("words:fetch", "Fetch the page at url."),
    ]
    assert pairs[0].source == f"add ( a , b ) | def add(a, b):{NEWLINE}    total = a + b{NEWLINE}    return total"
    # a body that was only its docstring
    assert pairs[1].source == f"only doc ( ) | def only_doc():{NEWLINE}    pass"
    assert pairs[3].source == (f"counter . increment ( self , step ) | def increment(self, step=1):{NEWLINE}    self.value += step{NEWLINE}"
                               f"    return self.value")
    assert pairs[6].source.startswith("fetch ( url ) | async def fetch(url):")


def test_sources_round_trip_to_the_code_without_its_docstring(fake_roots):
    pairs, _ = collect_pairs(fake_roots)
    code = pairs[5].source.split(" | ", 1)[1].replace(NEWLINE, "\n")
    function = ast.parse(code).body[0]
    assert ast.get_docstring(function) is None
    assert code == "def shout(text):\n    return text.upper() + '!'"


def test_module_names_and_skipped_directories(fake_stdlib, fake_package):
    assert [name for name, _ in module_files(fake_stdlib)] == ["broken", "numbers", "strings", "words", "pkg",
                                                              "pkg.sub"]
    assert [name for name, _ in module_files(fake_package.path, "fakepkg")] == ["fakepkg", "fakepkg.core"]


def test_a_package_root_prefixes_its_module_names(fake_package):
    pairs, _ = collect_pairs([fake_package])
    assert [(p.group, p.target) for p in pairs] == [("fakepkg:helper", "Help with x, always."),
                                                    ("fakepkg.core:Reader", "Read the whole stream.")]


@pytest.mark.parametrize("docstring, sentence", [
    ("Return x. Then y.", "Return x."),
    ("Spread over\n   two lines\n\nNext paragraph. More.", "Spread over two lines"),
    ("No full stop at the end", "No full stop at the end"),
    ("Ends with a stop.", "Ends with a stop."),
])
def test_first_sentence(docstring, sentence):
    assert first_sentence(docstring) == sentence


@pytest.mark.parametrize("docstring, target", [
    ("Call :meth:`Widget.draw` on ``self``. Then more.", "Call Widget.draw on self."),
    ("Open `path` for :class:`~io.TextIOWrapper` reading.", "Open path for io.TextIOWrapper reading."),
    ("Two words.", None),
    ("Parameters\n----------\nx : int", None),
    (":param x: the value to add", None),
    (">>> add(1, 2)\n3", None),
    ("Args: x (int): the value.", None),
    ("_private helper for the parser.", None),
])
def test_summary_takes_off_markup_and_refuses_what_is_not_a_summary(docstring, target):
    assert summary(docstring) == target


def test_split_of_uses_the_md5_of_the_group():
    for group in ("numbers:add", "words:fetch", "strings:shout", "os.path:join", "json.decoder:JSONDecoder"):
        bucket = int(hashlib.md5(group.encode()).hexdigest(), 16) % 100
        assert split_of(group) == ("test" if bucket < 3 else "valid" if bucket < 5 else "train")
    assert [split_of(g) for g in ("numbers:add", "words:fetch", "strings:shout")] == ["train", "valid", "test"]


def test_build_writes_aligned_files_and_is_deterministic(fake_roots, tmp_path):
    messages: list[str] = []
    first, second = tmp_path / "first", tmp_path / "second"
    for directory in (first, second):
        directory.mkdir()
        build(directory, messages.append, roots=fake_roots)
    assert read(first, "train.tgt") == ["Return the sum of a and b.", "This function has only a docstring.",
                                        "Join os.path.join and a paths.", "Increase the counter by step.",
                                        "Set the counter back to zero."]
    assert read(first, "valid.tgt") == ["Fetch the page at url."]
    assert read(first, "test.src") == [f"shout ( text ) | def shout(text):{NEWLINE}    return text.upper() + '!'"]
    for name in ("train.src", "train.tgt", "valid.src", "valid.tgt", "test.src", "test.tgt", "README.txt"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    assert "train 5, valid 1, test 1" in (first / "README.txt").read_text()
    assert messages[0].startswith("pydoc: train 5, valid 1, test 1 pairs from the standard library and nothing")


def test_signature_names_the_rules_python_and_every_package_version():
    text = signature()
    assert text.startswith("pydoc 3; Python 3.")
    assert all(f"{package} " in text for package in PACKAGES)


def test_only_the_standard_library_and_the_pinned_torch_are_read():
    """The set-up line pins torch alone: code of unpinned packages would make the set differ between machines."""
    roots = default_roots()
    assert [root.package for root in roots] == ["", "torch"]
    assert (roots[1].path / "__init__.py").is_file()


@pytest.mark.parametrize("identifier, plain", [
    ("_dump_registry", "dump registry"), ("getURLForHTTPServer2", "get url for http server2"),
    ("ABCMeta", "abc meta"), ("__init__", "init"), ("x", "x")])
def test_identifiers_read_as_the_words_a_summary_uses(identifier, plain):
    assert words(identifier) == plain


def test_a_heading_names_the_class_the_function_and_every_parameter_in_order():
    function = ast.parse("def _dumpRegistry(self, a, /, b, *rest, c=1, **options): pass").body[0]
    assert heading("ABCMeta", function) == "abc meta . dump registry ( self , a , b , rest , c , options )"
    assert heading("_dumpRegistry", function).startswith("dump registry ( self")  # a module-level function
