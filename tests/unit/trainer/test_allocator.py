"""--cpu_memory_reuse: glibc's malloc keeps freed memory in the process (no mapping per large block, no trimming),
checked on malloc's own counters in a fresh process; the Trainer applies it on a CPU only when the key says so."""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import logging

import pytest

from tests.helpers import fresh_python
from textbox.trainer import loop

_GLIBC = hasattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), "mallinfo2")

# A fresh process (malloc's thresholds move as a process allocates): 24 MiB from malloc, then freed. mallinfo2's
# hblkhd is the memory in blocks mapped on their own (the probe reports what the block added), arena the heap's size.
_PROBE = """
import ctypes, json, sys
from textbox.trainer.allocator import keep_freed_memory
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
kept = keep_freed_memory() if sys.argv[1] == "keep" else None
before = libc.mallinfo2().hblkhd
block = libc.malloc(24 << 20)
mapped = libc.mallinfo2().hblkhd - before
libc.free(block)
print(json.dumps({"kept": kept, "mapped": mapped, "heap_after_free": libc.mallinfo2().arena}))
"""


def _probe(way: str) -> dict:
    done = fresh_python(_PROBE, way)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.skipif(not _GLIBC, reason="glibc's malloc (mallinfo2) only")
def test_freed_memory_stays_in_the_heap_instead_of_being_unmapped():
    default, kept = _probe("default"), _probe("keep")
    assert default["mapped"] >= 24 << 20  # glibc's default: a block of its own, unmapped when freed
    assert kept["kept"] is True
    assert kept["mapped"] == 0 and kept["heap_after_free"] >= 24 << 20  # from the heap, and still there when freed


@pytest.mark.parametrize("reuse", [True, False])
def test_the_trainer_keeps_freed_memory_on_a_cpu_only_when_asked(make_trainer, train_data, monkeypatch, caplog,
                                                                  reuse):
    calls = []
    monkeypatch.setattr(loop, "keep_freed_memory", lambda: calls.append(1) or True)
    with caplog.at_level(logging.INFO, logger="textbox.tests"):
        make_trainer(cpu_memory_reuse=reuse, max_steps=1).fit(train_data, None)
    assert calls == ([1] if reuse else [])
    assert ("freed memory is kept" in caplog.text) is reuse
