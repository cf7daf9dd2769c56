"""--gpu_id with --workers: each local worker process takes its own share of the list for every run it does;
a list too short for the workers is refused before any trial runs."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from textbox.config import ConfigError
from textbox.config.launcher import worker_gpu_ids
from textbox.studies.search.search import run_search
from tests.unit.studies.search.test_search import fake_run, search_args  # noqa: F401 - the fixture


def device_recording_run(config) -> dict:
    """fake_run, plus which process ran it on which devices."""
    results = fake_run(config)
    (Path(results["run_dir"]) / "devices.json").write_text(json.dumps({"pid": os.getpid(), "gpu_id": config.gpu_id}))
    return results


def test_each_worker_runs_on_its_own_share(search_args):  # noqa: F811
    result = run_search([*search_args, "--workers=2", "--gpu_id=0,1,2,3", "--metrics_for_best_model=['loss']"],
                        runner=device_recording_run)
    seen = [json.loads(path.read_text()) for path in result.directory.rglob("devices.json")]
    assert len(seen) >= 6
    by_process: dict[int, set[str]] = {}
    for record in seen:
        by_process.setdefault(record["pid"], set()).add(str(record["gpu_id"]))
    workers = {pid: shares for pid, shares in by_process.items() if pid != os.getpid()}
    assert all(len(shares) == 1 for shares in workers.values())  # a worker keeps its devices
    assert set().union(*workers.values()) <= {"0,1", "2,3"} and len(workers) >= 1
    if len(workers) == 2:
        assert set().union(*workers.values()) == {"0,1", "2,3"}  # never the same devices twice at once


def test_a_gpu_id_list_too_short_for_the_workers_is_refused_before_any_trial(search_args, tmp_path):  # noqa: F811
    with pytest.raises(ConfigError, match=r"--gpu_id=0 cannot give each of the --workers=2 worker processes its "
                                          r"own device"):
        run_search([*search_args, "--workers=2", "--gpu_id=0"], runner=device_recording_run)
    assert not (tmp_path / "saved").exists()


def test_shares_are_equal_consecutive_groups():
    assert worker_gpu_ids("0,1,2,3", 2) == ["0,1", "2,3"]
    assert worker_gpu_ids([4, 5], 2) == ["4", "5"]
    assert worker_gpu_ids(None, 2) is None and worker_gpu_ids("0,1", 1) is None
    with pytest.raises(ConfigError.__mro__[1], match="give a multiple of 2 ids"):
        worker_gpu_ids("0,1,2", 2)
