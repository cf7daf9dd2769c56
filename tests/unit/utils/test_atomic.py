"""Atomic writes: the target appears whole or not at all, and replaces an older copy."""
from __future__ import annotations

import pytest

from tests.helpers import fresh_python_prints
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


def test_a_full_disk_is_a_no_space_left_naming_the_directory_and_its_partial_copy_is_removed(tmp_path, monkeypatch):
    """torch.save reports a full disk as a RuntimeError without an errno: the free space where it failed tells."""
    import errno
    import shutil
    from collections import namedtuple

    from textbox.utils.atomic import NoSpaceLeft

    usage = namedtuple("usage", "total used free")
    free = {"bytes": 0}
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(2**30, 2**30, free["bytes"]))
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "weights").write_text("old")
    with pytest.raises(NoSpaceLeft) as caught, atomic_directory(tmp_path / "best") as staging:
        (staging / "weights").write_text("half")
        raise RuntimeError("basic_ios::clear: iostream error")
    assert caught.value.errno == errno.ENOSPC
    assert str(caught.value.strerror).startswith(f"no space left on the disk of {tmp_path} while writing best")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["best"]  # no partial copy
    assert (tmp_path / "best" / "weights").read_text() == "old"  # the previous version, intact
    free["bytes"] = 2**30  # room on the disk: the error is not a full disk, and stays what it was
    with pytest.raises(RuntimeError), atomic_directory(tmp_path / "best") as staging:
        raise RuntimeError("another failure")
    with pytest.raises(NoSpaceLeft):  # an errno says so whatever the free space
        _raise_enospc(tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["best"]


def _raise_enospc(directory):
    import errno

    from textbox.utils.atomic import staged

    staging = directory / ".results.json.tmp"
    with staged(staging, "results.json"):
        staging.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")


def test_stale_staging_entries_of_killed_processes_are_removed_and_a_live_ones_kept(tmp_path):
    import os

    from textbox.utils.atomic import aside, remove_stale_staging

    dead_pid = int(fresh_python_prints("import os; print(os.getpid())"))  # a process that has ended
    for name in (f".checkpoint_best.partial-{dead_pid}-0123abcd", ".checkpoint_last.tmp", "checkpoint_last",
                 "checkpoint_best", f".results.json.partial-{os.getppid()}-89abcdef", ".hidden_by_the_user"):
        (tmp_path / name).mkdir()
    (aside(tmp_path / "checkpoint_last")).mkdir()  # the previous version, its replacement in place
    (aside(tmp_path / "checkpoint-8")).mkdir()  # a kill between the two renames: the previous version goes back
    assert remove_stale_staging(tmp_path) == [f".checkpoint_best.partial-{dead_pid}-0123abcd",
                                              ".checkpoint_last.old", ".checkpoint_last.tmp"]
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        ".hidden_by_the_user", f".results.json.partial-{os.getppid()}-89abcdef", "checkpoint-8", "checkpoint_best",
        "checkpoint_last"]


def test_a_cache_entrys_staging_copies_a_killed_process_left_are_removed_when_it_is_written_again(tmp_path):
    """A cache (tokenised splits, trained tokenizers, unpacked datasets) is written with atomic_directory and never
    resumed: the half-written copy of a killed process is removed by the next write of that entry. One whose lock
    is held (a writer on another machine sharing the disk) or whose process is alive here is kept, and so are other
    entries' copies."""
    import fcntl
    import os

    from textbox.utils.atomic import remove_abandoned_staging

    dead_pid = int(fresh_python_prints("import os; print(os.getpid())"))  # a process that has ended
    entry = tmp_path / "train-0123"
    abandoned, held, live, other = (tmp_path / f".train-0123.partial-{dead_pid}-0123abcd",
                                    tmp_path / f".train-0123.partial-{dead_pid}-89abcdef",
                                    tmp_path / f".train-0123.partial-{os.getppid()}-01234567",
                                    tmp_path / f".valid-4567.partial-{dead_pid}-0123abcd")
    for staging in (abandoned, held, live, other):
        staging.mkdir()
        (staging / "data-00000-of-00001.arrow").write_bytes(b"half")
    writer = os.open(held, os.O_RDONLY)
    fcntl.flock(writer, fcntl.LOCK_SH)  # as atomic_directory's writer holds it
    try:
        with atomic_directory(entry) as staging:
            (staging / "data-00000-of-00001.arrow").write_bytes(b"whole")
            assert remove_abandoned_staging(entry) == []  # the writer's own copy is kept while it writes
    finally:
        os.close(writer)
    assert (entry / "data-00000-of-00001.arrow").read_bytes() == b"whole"
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([entry.name, held.name, live.name, other.name])
