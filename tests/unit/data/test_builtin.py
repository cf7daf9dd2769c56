"""Built-in datasets are built once, atomically, and never over a foreign directory."""
from __future__ import annotations

import functools
import subprocess
import sys

import pytest

import textbox.data.pydoc
from tests.conftest import PROJECT_ROOT
from textbox.config.errors import DataError
from textbox.data.builtin import BUILTIN_DATASETS, PLAIN_FILES, ensure_builtin


@pytest.fixture
def fake_pydoc(monkeypatch, fake_roots):
    monkeypatch.setattr(textbox.data.pydoc, "build", functools.partial(textbox.data.pydoc.build, roots=fake_roots))


def test_builtin_names_resolve_without_heavy_imports():
    assert BUILTIN_DATASETS == {"pydoc": "textbox.data.pydoc:build"}
    code = "import sys, textbox.data.builtin; print([m for m in ('torch', 'datasets') if m in sys.modules])"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=PROJECT_ROOT).stdout
    assert output.strip() == "[]"


def test_builds_once(tmp_path, fake_pydoc):
    directory = tmp_path / "dataset" / "pydoc"
    messages: list[str] = []
    ensure_builtin("pydoc", directory, messages.append)
    assert all((directory / name).is_file() for name in PLAIN_FILES)
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
