"""Cache entries checked when read (textbox/utils/checksums.py): any change to a recorded file is found, the
modification time put back included, and an intact entry is hashed once per process."""
from __future__ import annotations

import os

from textbox.utils import checksums


def test_a_file_overwritten_in_place_is_found_even_with_its_modification_time_put_back(tmp_path, monkeypatch):
    entry = tmp_path / "entry"
    (entry / "sub").mkdir(parents=True)
    (entry / "weights.bin").write_bytes(bytes(range(256)) * 64)
    (entry / "sub" / "vocabulary.json").write_text('{"a": 1}')
    checksums.write_record(entry, "record.json")
    assert checksums.damage_of(entry, "record.json") is None

    hashed: list[str] = []
    real = checksums._hashed
    monkeypatch.setattr(checksums, "_hashed", lambda path: hashed.append(path.name) or real(path))
    assert checksums.damage_of(entry, "record.json") is None and hashed == []  # unchanged files: not hashed again

    weights = entry / "weights.bin"
    stamp = weights.stat()
    data = bytearray(weights.read_bytes())
    data[100] ^= 0xFF
    with open(weights, "r+b") as handle:  # in place: same inode, same size
        handle.write(data)
    os.utime(weights, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert checksums.damage_of(entry, "record.json") == "weights.bin does not hold the bytes written: its checksum " \
                                                        "differs"
    data[100] ^= 0xFF
    weights.write_bytes(data)
    (entry / "sub" / "vocabulary.json").unlink()
    assert checksums.damage_of(entry, "record.json") == "sub/vocabulary.json is missing"
    (entry / "record.json").unlink()
    assert checksums.damage_of(entry, "record.json").startswith("no readable record.json")
