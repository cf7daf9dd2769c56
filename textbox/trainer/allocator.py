"""``--cpu_memory_reuse``: the training process keeps the memory it frees, for the next step to reuse.

A training step allocates and frees the same large tensors every step (activations, their gradients, autocast's
casts, oneDNN's scratch space). With its default settings glibc's malloc gives every block above a moving threshold
its own mapping, unmapped when freed, and hands free memory at the top of the heap back to the system: each step then
faults its pages in again, and the kernel zeroes them. Raising both thresholds with ``mallopt`` keeps the memory in
the process (its resident size stays near its peak instead of falling between steps). Setting one threshold alone
makes it worse: it switches glibc's adaptive mmap threshold off. docs/speedups.md has the measured effect. The C
libraries without ``mallopt`` (macOS, musl) keep their own behaviour.
"""
from __future__ import annotations

import ctypes
import ctypes.util

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# glibc refuses an mmap threshold above HEAP_MAX_SIZE / 2 (32 MiB on 64-bit machines): larger blocks keep their
# own mappings. The trim threshold has no such cap.
MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 1024 * 1024 * 1024


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process (and the processes it forks later). False where the
    C library has no ``mallopt`` or refuses the values (nothing is changed then)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
