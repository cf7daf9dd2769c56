"""--engine=ray end to end on this machine: a local Ray instance, and a `ray start --head` cluster joined with
--ray_address. The runs are deterministic on CPU, so Ray must give the same figures as the local engine."""
from __future__ import annotations

import csv
import os
import signal
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, offline_env, run_script

pytest.importorskip("ray.tune", reason='--engine=ray needs pip install -e ".[ray]"')

TIMING = {"seconds"}  # differs from run to run
RAY_CLI = str(Path(sys.executable).parent / "ray")


@pytest.fixture
def common(tmp_path: Path) -> list[str]:
    data = make_copy_dataset(tmp_path / "data", {"train": 32, "valid": 8, "test": 8})
    return [*TINY_MODEL_ARGS, f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}",
            f"--cache_dir={tmp_path / 'cache'}", "--max_steps=2", "--valid_strategy=step", "--valid_steps=2"]


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def without(row: dict, keys: set[str], study: str) -> dict:
    """A row or best.json with the timing left out and the study's own directory name made neutral."""
    return {key: value.replace(f"/saved/{study}/", "/saved/STUDY/") if isinstance(value, str) else value
            for key, value in row.items() if key not in keys}


@pytest.mark.slow
def test_a_grid_search_on_a_local_ray_instance_matches_the_local_engine(tmp_path: Path, common: list[str]):
    space = tmp_path / "lr.space"
    space.write_text("learning_rate choice [0.001, 0.003]\n")
    results = {}
    for engine in ("local", "ray"):
        done = run_script([f"--space={space}", f"--engine={engine}", f"--filename={engine}", *common], tmp_path,
                          timeout=300, script="run_hyper.py")
        assert done.returncode == 0, done.stderr[-3000:]
        directory = tmp_path / "saved" / engine
        columns, rows = read_csv(directory / "trials.csv")
        best = json.loads((directory / "best.json").read_text())
        results[engine] = (columns, [without(row, TIMING, engine) for row in rows], without(best, TIMING, engine))
        assert (directory / f"test-{best['trial']}" / "generation.txt").is_file()
        assert (directory / "search.png").is_file() and (directory / "summary.md").is_file()
    assert [row["status"] for row in results["ray"][1]] == ["ok", "ok"]
    assert results["ray"] == results["local"]  # same columns, trials, figures, best trial and its test figures
    assert (tmp_path / "saved" / "ray" / "tune").is_dir()  # Tune's own record of the study


@pytest.fixture
def ray_head(tmp_path: Path):
    """A one-machine Ray cluster on 127.0.0.1, stopped whatever happens. `ray start --block` in the foreground is
    stopped by a SIGTERM to that one process, which ends all it started (`ray stop` would end every Ray instance
    on the machine, a parallel test's too)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = offline_env()
    head = subprocess.Popen([RAY_CLI, "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}",
                             "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert head.poll() is None, f"ray start --head exited with {head.returncode}"
            with socket.socket() as attempt:
                if attempt.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "ray start --head did not listen within 120 s"
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        head.terminate()
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        # the head's address file (ray stop would remove it): a later ray.init() of anyone would try to join it
        current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        if current.is_file() and current.read_text().strip().endswith(f":{port}"):
            current.unlink()


@pytest.mark.slow
def test_a_seed_study_on_a_joined_ray_cluster_matches_the_local_engine(tmp_path: Path, common: list[str], ray_head):
    rows = {}
    for engine, extra in (("local", []), ("ray", ["--engine=ray", f"--ray_address={ray_head}",
                                                  "--trial_resources={'cpu': 1}"])):
        # `ray start` turns on Ray's token authentication (the token is in ~/.ray/auth_token); a driver joining
        # such a cluster says so with RAY_AUTH_MODE=token (Ray's rule, told in docs/studies.md)
        done = run_script(["--multi_seed=2", f"--filename={engine}", *extra, *common], tmp_path, timeout=300,
                          script="run_multi_seed.py", env={"RAY_AUTH_MODE": "token"})
        assert done.returncode == 0, done.stderr[-3000:]
        columns, found = read_csv(tmp_path / "saved" / engine / "seeds.csv")
        rows[engine] = (columns, [without(row, TIMING, engine) for row in found])
        summary = json.loads((tmp_path / "saved" / engine / "summary.json").read_text())
        assert summary["finished"] == [2020, 2021]
    assert [row["status"] for row in rows["ray"][1]] == ["ok", "ok"]
    assert rows["ray"] == rows["local"]
    assert f"engine=ray ({ray_head})" in (tmp_path / "saved" / "ray" / "study.log").read_text()


@pytest.mark.slow
def test_a_worker_that_dies_mid_run_is_a_failed_row_not_a_hang(tmp_path: Path):
    from textbox.studies.search.search import run_search
    from textbox.studies.seeds import run_multi_seed
    from tests.integration.ray_runs import killing_run  # by package name: Ray workers import it

    data = make_copy_dataset(tmp_path / "data", {"train": 4, "valid": 2, "test": 2})
    space = tmp_path / "lr.space"
    space.write_text("learning_rate choice [0.001, 0.003]\n")
    common = ["--engine=ray", f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}"]
    result = run_search([f"--space={space}", "--filename=search", "--metrics_for_best_model=['loss']", *common],
                        runner=killing_run)
    _, rows = read_csv(result.directory / "trials.csv")
    assert [(row["trial"], row["status"]) for row in rows] == [("trial-000", "ok"), ("trial-001", "failed")]
    assert "the Ray trial failed" in rows[1]["error"] and "died" in rows[1]["error"].lower()
    assert result.best.tid == 0

    study = run_multi_seed(["--multi_seed=2", "--filename=seeds", *common], runner=killing_run)
    _, rows = read_csv(study.directory / "seeds.csv")
    assert [(row["seed"], row["status"]) for row in rows] == [("2020", "ok"), ("2021", "failed")]
    assert "the Ray worker running it failed" in rows[1]["error"] and study.failed.keys() == {2021}


def _processes_carrying(entry: bytes) -> list[int]:
    """This user's living processes whose environment holds ``entry`` (NAME=value)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (proc.name.isdigit() and entry in (proc / "environ").read_bytes().split(b"\0")
                    and (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").is_file(), reason="finds the Ray processes through /proc")
def test_a_driver_killed_with_sigkill_takes_its_local_ray_instance_with_it(tmp_path: Path):
    """Ray ends its gcs_server, raylet and workers with the driver, but its agents stayed 60 s waiting for the
    dead GCS. The instance's processes are found by a variable of this test in the driver's environment, which
    every one of them inherits (never another test's Ray)."""
    data = make_copy_dataset(tmp_path / "data", {"train": 4, "valid": 2, "test": 2})
    saved = tmp_path / "saved"
    tag = f"TEXTBOX_TEST_RAY_DRIVER={tmp_path.name}-{time.time_ns()}"
    # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0: the instance on 127.0.0.1 only
    env = offline_env(**dict([tag.split("=", 1)]), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    driver = subprocess.Popen([sys.executable, "-c", "from tests.integration.ray_runs import "
                               f"drive_a_sleeping_seed_study as d; d({str(data)!r}, {str(saved)!r})"],
                              cwd=Path(__file__).parents[2], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not list(saved.glob("**/running-*")):
            assert driver.poll() is None, driver.stderr.read().decode()[-3000:] if driver.stderr else ""
            assert time.monotonic() < deadline, "the run never started on Ray"
            time.sleep(0.2)
        ray_processes = set(_processes_carrying(tag.encode())) - {driver.pid}
        running = int(next(saved.glob("**/running-*")).name.split("-")[1])
        assert running in ray_processes and len(ray_processes) >= 4  # gcs_server, raylet, agents, the worker
        driver.kill()
        driver.wait()
        deadline = time.monotonic() + 10
        while (left := _processes_carrying(tag.encode())) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left == []
    finally:
        driver.kill()
        for pid in _processes_carrying(tag.encode()):  # whatever the outcome, nothing of this test's Ray stays
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
