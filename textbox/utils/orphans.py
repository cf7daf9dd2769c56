"""Worker processes end with the process that started them.

A study's pool workers (textbox.studies.common.runner) wait for their next run on a queue whose pipe they hold both
ends of: a driver killed with ``kill -9`` (or for memory) left them waiting for ever, each with its imported libraries
(about 600 MB) and, on a GPU, its device memory. ``end_with_parent`` makes the calling process end when its parent
does: on Linux the kernel sends it SIGKILL the moment the parent ends (``prctl(PR_SET_PDEATHSIG)``); elsewhere a
daemon thread sees the parent gone (the process is re-parented: ``os.getppid()`` changes) within a second and ends the
process. A parent that ended before the call is caught too.

Linux sends the signal when the *thread* that started the worker ends: the pool's workers are started by the thread
that runs the study (``run_jobs``), which outlives its pool (it shuts the pool down before it returns). The worker
must be the parent's own child (spawn or fork; a forkserver's children have the server as parent).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
POLL_SECONDS = 1.0  # how often the watchdog thread (not Linux) looks for the parent


def end_with_parent(parent_pid: int) -> None:
    """End this process (SIGKILL: a worker whose parent is gone has nobody to report to) once ``parent_pid``, its
    parent when it started, is no longer its parent."""
    if not (sys.platform.startswith("linux") and _set_parent_death_signal(signal.SIGKILL)):
        threading.Thread(target=_watch, args=(parent_pid,), name="end-with-parent", daemon=True).start()
    if os.getppid() != parent_pid:  # the parent ended before the kernel was told: nobody will send the signal
        os._exit(1)


def _set_parent_death_signal(number: int) -> bool:
    """Ask the kernel for ``number`` when the parent ends; whether it was set."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, int(number), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(POLL_SECONDS)
    os._exit(1)
