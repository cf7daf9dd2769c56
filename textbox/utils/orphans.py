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

Processes the caller does not start itself (a local Ray instance: its raylet starts the agents and the workers) are
followed by ``marked_descendants_end_with_this_process``: each carries a mark in its environment, and a small watcher
process, told by a pipe the moment the caller ends, ends every process that carries it.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Iterator

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


# --- processes started by others on our behalf: a mark in their environment and a watcher ---------------------

MARK_VARIABLE = "TEXTBOX_ENDS_WITH"  # value: <pid of the process they end with>-<a random id>
SWEEP_SECONDS = 3.0  # how long the watcher goes on looking (a process being started as the caller ended)
CLEAN_END = b"end"  # what the caller writes before it closes the pipe at the block's end


@contextlib.contextmanager
def marked_descendants_end_with_this_process() -> Iterator[str]:
    """Every process started inside the block, and every process those start (by any means that hands the
    environment down), ends when this process ends, even by ``kill -9``; yields the mark.

    A local Ray instance is the case: Ray ends its gcs_server, raylet and workers with the driver, but its agents
    (ray::DashboardAgent, ray::RuntimeEnvAgent) wait 60 s for the dead GCS to take a last message (measured on Ray
    2.60). The mark is only this process's (its pid and a random id): only what was started inside the block
    carries it, so no other process (another study's Ray, another user's) is ever ended. Linux only (/proc):
    elsewhere the block runs without a watcher."""
    if not Path("/proc/self/environ").is_file():
        yield ""
        return
    mark = f"{os.getpid()}-{uuid.uuid4().hex}"
    read_end, write_end = os.pipe()  # both close on exec: only the watcher holds the read end, only we the write end
    environment = {name: value for name, value in os.environ.items() if name != MARK_VARIABLE}
    source = str(Path(__file__).resolve().parents[2])  # the watcher imports this module wherever it was run from
    watcher = subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.insert(0, {source!r}); "
                                f"from textbox.utils.orphans import watch; watch({mark!r})"],
                               stdin=read_end, env=environment, start_new_session=True)
    os.close(read_end)
    earlier = os.environ.get(MARK_VARIABLE)
    os.environ[MARK_VARIABLE] = mark
    try:
        yield mark
    finally:
        if earlier is None:
            os.environ.pop(MARK_VARIABLE, None)
        else:
            os.environ[MARK_VARIABLE] = earlier
        os.write(write_end, CLEAN_END)  # one look is enough: nothing is being started any more
        os.close(write_end)  # the watcher ends what is left (nothing, after a clean shutdown) and exits
        with contextlib.suppress(subprocess.TimeoutExpired):
            watcher.wait(timeout=SWEEP_SECONDS + 5)


def watch(mark: str) -> None:
    """The watcher: wait until the marking process ends (its end of the pipe on our stdin closes), then end every
    process carrying ``mark``, looking again for SWEEP_SECONDS for those being started meanwhile."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the study is for the study, not for its watcher
    told = sys.stdin.buffer.read()  # returns when the pipe closes: at the block's end, or with the process
    looking = 0.0 if told == CLEAN_END else SWEEP_SECONDS
    started = time.monotonic()
    while time.monotonic() - started < looking + 30:  # bounded: a process stuck in the kernel ignores SIGKILL
        marked = marked_processes(mark)
        for pid in marked:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not marked and time.monotonic() - started >= looking:
            return
        time.sleep(0.2)


def marked_processes(mark: str) -> list[int]:
    """The pids of the living processes whose environment carries ``mark`` (those whose environment cannot be
    read, e.g. another user's, cannot carry it)."""
    wanted = f"{MARK_VARIABLE}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if wanted in (entry / "environ").read_bytes().split(b"\0") and not _is_zombie(entry):
                found.append(int(entry.name))
        except OSError:  # ended meanwhile, or another user's
            continue
    return found


def _is_zombie(entry: Path) -> bool:
    return (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
