"""Atomic writes: the target appears whole or not at all, and replaces an older copy."""
from __future__ import annotations

import pytest

from textbox.utils.atomic import atomic_directory, write_text_atomic


def test_directory_appears_only_when_the_block_succeeds(tmp_path):
    final = tmp_path / "entry"
    with pytest.raises(RuntimeError):
        with atomic_directory(final) as staging:
            (staging / "half.txt").write_text("half")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
    with atomic_directory(final) as staging:
        (staging / "whole.txt").write_text("whole")
        assert not final.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["entry"]
    assert (final / "whole.txt").read_text() == "whole"


def test_directory_replaces_an_older_copy(tmp_path):
    final = tmp_path / "checkpoint_best"
    for step in ("1", "2"):
        with atomic_directory(final) as staging:
            (staging / f"step{step}.txt").write_text(step)
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint_best"]
    assert [p.name for p in final.iterdir()] == ["step2.txt"]


def test_an_entry_another_process_published_meanwhile_is_kept_not_replaced_under_it(tmp_path):
    """Two study workers tokenising the same split into one cache: the one that finishes second must not move the
    first one's entry away while the first may be reading it."""
    final = tmp_path / "tokenized-train-abc"
    with atomic_directory(final) as staging:
        (staging / "data.arrow").write_text("second")
        final.mkdir()  # the other worker publishes first
        (final / "data.arrow").write_text("first")
        inode = (final / "data.arrow").stat().st_ino
    assert (final / "data.arrow").read_text() == "first" and (final / "data.arrow").stat().st_ino == inode
    assert [p.name for p in tmp_path.iterdir()] == ["tokenized-train-abc"]  # the second copy is gone


def test_text_file_is_replaced_whole(tmp_path):
    path = tmp_path / "sub" / "results.json"
    write_text_atomic(path, "old")
    write_text_atomic(path, "new ✓")
    assert path.read_text(encoding="utf-8") == "new ✓"
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]


def test_a_kill_between_the_two_renames_keeps_the_previous_version(tmp_path):
    from textbox.utils.atomic import aside, restore_interrupted

    final = tmp_path / "checkpoint_best"
    with atomic_directory(final) as staging:
        (staging / "weights").write_text("v1")
    final.rename(aside(final))  # the state right after the first rename of a later save
    restore_interrupted(final)
    assert (final / "weights").read_text() == "v1"
