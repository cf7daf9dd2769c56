"""Built-in datasets are built once, atomically, and never over a foreign directory."""
from __future__ import annotations

import functools

import pytest

import textbox.data.pydoc
from textbox.config.errors import DataError
from textbox.data.builtin import BUILD_STAMP, BUILTIN_DATASETS, PLAIN_FILES, ensure_builtin


@pytest.fixture
def fake_pydoc(monkeypatch, fake_roots):
    monkeypatch.setattr(textbox.data.pydoc, "build", functools.partial(textbox.data.pydoc.build, roots=fake_roots))


def test_builtin_names_resolve():
    """(That textbox.data.builtin imports nothing heavy: tests/unit/test_light_imports.py.)"""
    assert BUILTIN_DATASETS == {"pydoc": "textbox.data.pydoc:build",
                                "pydoc_keywords": "textbox.data.pydoc_keywords:build"}


def test_builds_once(tmp_path, fake_pydoc):
    directory = tmp_path / "dataset" / "pydoc"
    messages: list[str] = []
    ensure_builtin("pydoc", directory, messages.append)
    assert all((directory / name).is_file() for name in PLAIN_FILES)
    assert (directory / BUILD_STAMP).read_text() == textbox.data.pydoc.signature() + "\n"
    assert len(messages) == 2
    ensure_builtin("pydoc", directory, messages.append)
    assert len(messages) == 2
    assert sorted(p.name for p in directory.parent.iterdir()) == ["pydoc"]  # no staging left behind


def test_a_failed_build_leaves_no_directory(tmp_path, monkeypatch):
    def failing_build(directory, log):
        (directory / "train.src").write_text("half\n")
        raise RuntimeError("killed")

    monkeypatch.setattr(textbox.data.pydoc, "build", failing_build)
    with pytest.raises(RuntimeError, match="killed"):
        ensure_builtin("pydoc", tmp_path / "pydoc", print)
    assert list(tmp_path.iterdir()) == []


def test_refuses_to_build_over_a_partial_directory(tmp_path, fake_pydoc):
    directory = tmp_path / "pydoc"
    directory.mkdir()
    (directory / "train.src").write_text("mine\n")
    with pytest.raises(DataError, match=r"pydoc lacks train\.tgt, valid\.src.*delete the directory"):
        ensure_builtin("pydoc", directory, print)
    assert (directory / "train.src").read_text() == "mine\n"


def test_a_set_built_under_another_signature_is_rebuilt(tmp_path, fake_pydoc, monkeypatch):
    directory = tmp_path / "dataset" / "pydoc"
    ensure_builtin("pydoc", directory, print)
    built_by = textbox.data.pydoc.signature()
    monkeypatch.setattr(textbox.data.pydoc, "BUILD_VERSION", 99)  # the rules changed since it was built
    messages: list[str] = []
    ensure_builtin("pydoc", directory, messages.append)
    assert messages[0].startswith(f"rebuilding the built-in dataset 'pydoc' in {directory}: it was built by {built_by},")
    assert "this version builds pydoc 99;" in messages[0]
    assert (directory / BUILD_STAMP).read_text().startswith("pydoc 99;")
    assert sorted(p.name for p in directory.parent.iterdir()) == ["pydoc"]  # the old set is gone


def test_a_set_from_before_build_stamps_is_rebuilt(tmp_path, fake_pydoc):
    directory = tmp_path / "pydoc"
    directory.mkdir()
    for name in PLAIN_FILES:
        (directory / name).write_text("stdlib only\n")
    (directory / "README.txt").write_text("pydoc: Python standard-library functions -> first sentence of their "
                                          "docstring.\nBuilt by textbox.data.pydoc from /usr/lib/python3.11 "
                                          "(Python 3.11.7).\n")
    messages: list[str] = []
    ensure_builtin("pydoc", directory, messages.append)
    assert "it was built by an earlier version" in messages[0]
    assert (directory / "train.tgt").read_text().startswith("Return the sum of a and b.")


def test_complete_files_the_builder_did_not_write_are_read_as_they_are(tmp_path, fake_pydoc):
    directory = tmp_path / "pydoc"
    directory.mkdir()
    for name in PLAIN_FILES:
        (directory / name).write_text("mine\n")
    messages: list[str] = []
    ensure_builtin("pydoc", directory, messages.append)
    assert messages == []
    assert all((directory / name).read_text() == "mine\n" for name in PLAIN_FILES)
    assert not (directory / BUILD_STAMP).exists()


def test_a_set_that_lost_a_file_is_rebuilt_and_the_log_says_which(tmp_path, fake_pydoc):
    directory = tmp_path / "dataset" / "pydoc"
    ensure_builtin("pydoc", directory, print)
    (directory / "test.tgt").unlink()
    messages: list[str] = []
    ensure_builtin("pydoc", directory, messages.append)
    assert messages[0] == f"rebuilding the built-in dataset 'pydoc' in {directory}: it lacks test.tgt"
    assert (directory / "test.tgt").is_file()
