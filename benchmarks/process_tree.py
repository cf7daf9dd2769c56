"""One command measured as a whole process tree: wall time, CPU time and peak memory of the command and every process
it starts (tokenising workers count), optionally under a memory cgroup (cgroup v1) of its own.

- CPU time: user + system of the command and of every descendant it waited for (``resource.getrusage(
  RUSAGE_CHILDREN)`` before and after: the kernel adds a reaped child's times to its parent's); a worker left to
  init without being waited for is not counted.
- Peak RSS: the largest sum of the resident memory of the command and all its live descendants, sampled with psutil
  every ``interval`` seconds (pages shared between a parent and its forked workers count once per process, as `ps`
  shows them; a peak shorter than the interval can be missed). Every sample is kept, with the tree's anonymous
  memory beside it (RSS less the file-backed and shared pages, psutil's ``shared``): a memory-mapped cache's pages
  that a run reads count in RSS but are clean page cache the kernel takes back, not memory the run holds.
"""
from __future__ import annotations

import os
import resource
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MEMORY_ROOT = Path("/sys/fs/cgroup/memory")


@dataclass
class Measured:
    returncode: int
    started: float  # unix time just before the command started
    wall_s: float
    cpu_s: float
    peak_rss_bytes: int
    peak_processes: int  # processes in the tree at the peak
    cgroup: dict[str, Any] = field(default_factory=dict)  # the memory cgroup's figures, when run under one
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (seconds from start, RSS, anonymous)

    def peak_before(self, seconds: float | None, anonymous: bool = False) -> int | None:
        """The largest sample (RSS, or anonymous memory) taken before ``seconds`` from the start (None: all)."""
        chosen = [(memory if anonymous else rss) for taken, rss, memory in self.samples
                  if seconds is None or taken < seconds]
        return max(chosen) if chosen else None


def measure(command: list[str], env: dict[str, str], output: Path, interval: float = 0.2,
            memory_limit: int | None = None) -> Measured:
    """Run ``command`` (stdout and stderr into ``output``) and measure it; under a memory cgroup limited to
    ``memory_limit`` bytes when given (``MemoryCgroup``: raises CgroupUnavailable when one cannot be made)."""
    import psutil

    cgroup = MemoryCgroup(memory_limit) if memory_limit is not None else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_rss, peak_processes = 0, 0
    samples: list[tuple[float, int, int]] = []
    try:
        with open(output, "w", encoding="utf-8") as log:
            started, clock = time.time(), time.perf_counter()
            process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                       preexec_fn=cgroup.join if cgroup else None)
            root = psutil.Process(process.pid)
            while process.poll() is None:
                rss, anonymous, processes = _tree_rss(root)
                samples.append((time.perf_counter() - clock, rss, anonymous))
                if rss > peak_rss:
                    peak_rss, peak_processes = rss, processes
                time.sleep(interval)
            wall = time.perf_counter() - clock
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        figures = cgroup.figures() if cgroup else {}
    finally:
        if cgroup:
            cgroup.remove()
    return Measured(process.returncode, started, wall, cpu, peak_rss, peak_processes, figures, samples)


def _tree_rss(root: Any) -> tuple[int, int, int]:
    """The summed RSS and anonymous memory (RSS less shared and file-backed pages) of ``root`` and its live
    descendants, and how many there are (processes that end while being read are skipped)."""
    import psutil

    total, anonymous, count = 0, 0, 0
    try:
        members = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0, 0, 0
    for member in members:
        try:
            memory = member.memory_info()
            total += memory.rss
            anonymous += memory.rss - getattr(memory, "shared", 0)
            count += 1
        except psutil.Error:
            continue
    return total, anonymous, count


class CgroupUnavailable(Exception):
    """No memory cgroup could be made here (no cgroup v1 memory controller, or no permission); the message says
    which."""


class MemoryCgroup:
    """A child of this process's own memory cgroup (cgroup v1), limited to ``limit`` bytes; a process joins it
    before exec (``join`` as Popen's preexec_fn), its descendants with it. Removed by ``remove`` once empty."""

    def __init__(self, limit: int):
        parent = MEMORY_ROOT / own_memory_cgroup().lstrip("/")
        self.path = parent / f"data_scale_{os.getpid()}_{time.monotonic_ns()}"
        try:
            self.path.mkdir()
        except OSError as error:
            raise CgroupUnavailable(f"cannot make a memory cgroup under {parent} ({error.strerror})") from error
        try:
            (self.path / "memory.limit_in_bytes").write_text(str(limit))
        except OSError as error:
            self.remove()
            raise CgroupUnavailable(f"cannot set {self.path}/memory.limit_in_bytes ({error.strerror})") from error
        self._procs = str(self.path / "cgroup.procs")

    def join(self) -> None:
        """Runs in the child between fork and exec: moves it into the cgroup."""
        with open(self._procs, "w") as procs:
            procs.write(str(os.getpid()))

    def figures(self) -> dict[str, Any]:
        """The limit, the peak usage the kernel recorded (page cache included), how often the limit was hit and
        how many processes its OOM killer ended."""
        read = lambda name: (self.path / name).read_text()  # noqa: E731
        oom = dict(line.split() for line in read("memory.oom_control").splitlines())
        return {"limit_bytes": int(read("memory.limit_in_bytes")),
                "max_usage_bytes": int(read("memory.max_usage_in_bytes")),
                "failcnt": int(read("memory.failcnt")), "oom_kills": int(oom.get("oom_kill", -1))}

    def remove(self) -> None:
        """rmdir once its processes have gone (a killed tree can take a moment to leave)."""
        for _ in range(100):
            try:
                if not (self.path / "cgroup.procs").read_text().strip():
                    self.path.rmdir()
                    return
            except FileNotFoundError:
                return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the memory cgroup {self.path} still holds processes; remove it with rmdir when they end")


def own_memory_cgroup() -> str:
    """This process's memory cgroup, as /proc/self/cgroup names it (cgroup v1's ``N:memory:/path`` line)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError as error:
        raise CgroupUnavailable(f"cannot read /proc/self/cgroup ({error.strerror})") from error
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            if not MEMORY_ROOT.is_dir():
                break
            return path
    raise CgroupUnavailable("no cgroup v1 memory controller here (/proc/self/cgroup has no memory line, or "
                            f"{MEMORY_ROOT} is absent; cgroup v2 is not supported by this script)")
