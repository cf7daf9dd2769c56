"""A staged write that fails for another reason than a full disk (a failing disk, a permission) is a WriteFailed
naming what was written and where, with its cause's reason, never the partial copy it removed; the previous version
stays. (A full disk: NoSpaceLeft, a WriteFailed too, in test_atomic.py.)"""
from __future__ import annotations

import errno
from pathlib import Path

import pytest

from textbox.utils.atomic import NoSpaceLeft, WriteFailed, atomic_directory, write_text_atomic


def test_a_failed_directory_write_names_the_entry_and_keeps_the_previous_version(tmp_path: Path):
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "weights").write_text("previous")
    with pytest.raises(WriteFailed) as caught, atomic_directory(tmp_path / "best") as staging:
        (staging / "weights").write_text("half")
        raise OSError(errno.EIO, "Input/output error", str(staging / "weights"))
    assert not isinstance(caught.value, NoSpaceLeft)
    assert caught.value.strerror == (f"could not write best in {tmp_path} (Input/output error): check that disk and "
                                     f"its permissions, then run again; the previous version, if any, is intact")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["best"]
    assert (tmp_path / "best" / "weights").read_text() == "previous"


def test_a_cause_outside_the_staging_copy_is_named(tmp_path: Path):
    with pytest.raises(WriteFailed, match=r"could not write data in .* \(Permission denied: /elsewhere/a\.tar\)"):
        with atomic_directory(tmp_path / "data"):
            raise PermissionError(errno.EACCES, "Permission denied", "/elsewhere/a.tar")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_file_write_names_the_file_and_leaves_no_partial_copy(tmp_path: Path, monkeypatch):
    (tmp_path / "results.json").write_text("{}\n")

    def failing(self, data, *args, **kwargs):
        raise OSError(errno.EIO, "Input/output error", str(self))

    monkeypatch.setattr(Path, "write_text", failing)
    with pytest.raises(WriteFailed, match=rf"could not write results\.json in {tmp_path} \(Input/output error\)"):
        write_text_atomic(tmp_path / "results.json", "{\"new\": 1}\n")
    monkeypatch.undo()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["results.json"]
    assert (tmp_path / "results.json").read_text() == "{}\n"


def test_an_error_that_is_not_an_oserror_is_left_as_it_is(tmp_path: Path):
    with pytest.raises(ValueError, match="not a write"), atomic_directory(tmp_path / "entry"):
        raise ValueError("not a write")
    assert list(tmp_path.iterdir()) == []
