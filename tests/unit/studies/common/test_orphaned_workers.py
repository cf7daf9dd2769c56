"""Worker processes end with the process that started them: a study driver killed with ``kill -9`` (or for memory)
left its pool workers waiting for ever on their queue (about 600 MB each, and on a GPU its memory), while the study
was resumed beside them. Each test starts a driver, waits until its workers are at work, kills the driver with
SIGKILL and expects every worker gone within seconds."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

MODULE = "tests.unit.studies.common.test_orphaned_workers"  # the drivers import it by this name
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="kill -9 is a POSIX signal")


def sleeping_run(config, **hooks) -> dict:
    """A study's run that records its worker's pid and takes its time."""
    (Path(os.environ["WORKER_PIDS"]) / str(os.getpid())).touch()
    time.sleep(600)
    return {}


def drive_study() -> None:
    """A study driver: two runs at once on two pool workers (textbox.studies.common.runner)."""
    from textbox.studies.common.runner import Job, run_jobs

    jobs = iter([Job(number, {"model": "transformer", "dataset": "orphans", "data_path": os.environ["WORKER_PIDS"]})
                 for number in range(2)])
    run_jobs(lambda: next(jobs, None), lambda key, outcome: None, 2, sleeping_run)


class _Slow:
    """A dataset whose items record the DataLoader worker that read them."""

    def __len__(self) -> int:
        return 1000

    def __getitem__(self, index: int) -> int:
        (Path(os.environ["WORKER_PIDS"]) / str(os.getpid())).touch()
        return index


def drive_loader() -> None:
    """A training process with DataLoader workers (num_workers=2) that stops between two batches."""
    from torch.utils.data import DataLoader

    batches = iter(DataLoader(_Slow(), batch_size=2, num_workers=2))
    next(batches)
    time.sleep(600)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (ended, not yet reaped by its new parent) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return not sys.platform.startswith("linux")


def _kill_driver_and_wait(driver: str, tmp_path: Path, within: float) -> list[int]:
    """Start ``driver`` (a function of this module), kill it with SIGKILL once two workers are at work; the pids
    of its workers still alive ``within`` seconds later."""
    env = {**os.environ, "WORKER_PIDS": str(tmp_path), "PYTHONPATH": str(PROJECT_ROOT), "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen([sys.executable, "-c", f"from {MODULE} import {driver}; {driver}()"],
                               cwd=PROJECT_ROOT, env=env)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2:
            assert time.monotonic() < deadline and process.poll() is None, "the workers never started"
            time.sleep(0.2)
            workers = [int(path.name) for path in tmp_path.iterdir() if path.name.isdigit()]
        process.kill()
        process.wait()
        deadline = time.monotonic() + within
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        return [pid for pid in workers if _alive(pid)]
    finally:
        for pid in workers:  # never leave one behind, whatever the outcome
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_study_workers_end_when_the_driver_is_killed(tmp_path):
    assert _kill_driver_and_wait("drive_study", tmp_path, within=5) == []


def test_dataloader_workers_end_when_their_process_is_killed(tmp_path):
    """torch's DataLoader workers watch their parent themselves (every 5 s): none outlives the run's process."""
    assert _kill_driver_and_wait("drive_loader", tmp_path, within=15) == []


def drive_marked() -> None:
    """A driver that starts two processes it does not wait for (detached, as Ray's raylet starts its agents): one
    before ``marked_descendants_end_with_this_process``, one inside it."""
    from textbox.utils.orphans import marked_descendants_end_with_this_process

    def detached(name: str) -> None:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        (Path(os.environ["WORKER_PIDS"]) / f"{name}-{child.pid}").touch()

    detached("unmarked")
    with marked_descendants_end_with_this_process():
        detached("marked")
        (Path(os.environ["WORKER_PIDS"]) / str(os.getpid())).touch()
        time.sleep(600)


def test_marked_processes_end_with_the_driver_and_only_they(tmp_path):
    """What a local Ray instance's driver relies on: a process started inside the block, by whatever route, ends
    within seconds of the driver's kill -9; one started before it is left alone."""
    env = {**os.environ, "WORKER_PIDS": str(tmp_path), "PYTHONPATH": str(PROJECT_ROOT)}
    driver = subprocess.Popen([sys.executable, "-c", f"from {MODULE} import drive_marked; drive_marked()"],
                              cwd=PROJECT_ROOT, env=env)
    started = {}
    try:
        deadline = time.monotonic() + 60
        while str(driver.pid) not in {path.name for path in tmp_path.iterdir()}:
            assert time.monotonic() < deadline and driver.poll() is None, "the driver never entered the block"
            time.sleep(0.1)
        started = {path.name.split("-")[0]: int(path.name.split("-")[1]) for path in tmp_path.iterdir()
                   if "-" in path.name}
        assert all(_alive(pid) for pid in started.values())
        driver.kill()
        driver.wait()
        deadline = time.monotonic() + 5
        while _alive(started["marked"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(started["marked"]) and _alive(started["unmarked"])
    finally:
        driver.kill()
        for pid in started.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_block_left_normally_restores_the_environment_and_its_watcher_ends(tmp_path):
    from textbox.utils.orphans import MARK_VARIABLE, marked_descendants_end_with_this_process, marked_processes

    with marked_descendants_end_with_this_process() as mark:
        assert os.environ[MARK_VARIABLE] == mark and str(os.getpid()) in mark
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        assert marked_processes(mark) == [child.pid]  # the watcher itself carries no mark
    assert MARK_VARIABLE not in os.environ
    assert child.wait(timeout=10) == -signal.SIGKILL  # what was left running at the end is ended too
    watchers = subprocess.run(["pgrep", "-f", mark], capture_output=True, text=True).stdout.split()
    assert watchers == []
