"""Ray Tune's side of a search: a driver interrupted and started again continues from Tune's record without
running a finished trial again, and --early_stop=asha stops bad trials at a validation (fake runs that report
their validations; a local Ray instance started and stopped by each search)."""
from __future__ import annotations

import csv
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import make_copy_dataset

pytest.importorskip("ray.tune", reason='--engine=ray needs pip install -e ".[ray]"')


def read_rows(directory: Path) -> list[dict[str, str]]:
    with open(directory / "trials.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def calls_per_trial(saved: Path) -> Counter:
    return Counter(path.name.split(".")[0] for path in (saved / "search" / "calls").iterdir())


@pytest.fixture
def args(tmp_path: Path) -> list[str]:
    data = make_copy_dataset(tmp_path / "data", {"train": 4, "valid": 2, "test": 2})
    return ["--engine=ray", "--filename=search", "--metrics_for_best_model=['loss']", f"--data_path={data}",
            f"--saved_dir={tmp_path / 'saved'}"]


@pytest.mark.slow
def test_an_interrupted_ray_search_is_restored_by_tune_without_running_a_finished_trial_again(
        tmp_path: Path, args: list[str], monkeypatch):
    from tests.integration.ray_runs import interrupting_run  # by package name: Ray workers import it
    from textbox.config import RunInterrupted
    from textbox.studies.search.search import run_search

    monkeypatch.setenv("TEXTBOX_TEST_DRIVER_PID", str(os.getpid()))
    space = tmp_path / "lr.space"
    space.write_text("learning_rate choice [0.001, 0.002, 0.003]\n")
    with pytest.raises(RunInterrupted, match="same arguments plus --filename=search --resume=True") as stop:
        run_search([f"--space={space}", *args], runner=interrupting_run)
    assert stop.value.exit_code == 130
    directory = tmp_path / "saved" / "search"
    before = read_rows(directory)
    assert "trial-001" not in {row["trial"] for row in before}  # it was running when the driver was stopped
    assert calls_per_trial(tmp_path / "saved")["trial-001"] == 1

    result = run_search([f"--space={space}", *args, "--resume=True"], runner=interrupting_run)
    after = read_rows(result.directory)
    assert [row for row in after if row["trial"] in {r["trial"] for r in before}] == before  # kept as they were
    assert sorted((row["trial"], row["learning_rate"], row["status"]) for row in after) == [
        ("trial-000", "0.001", "ok"), ("trial-001", "0.002", "ok"), ("trial-002", "0.003", "ok")]
    calls = calls_per_trial(tmp_path / "saved")
    assert all(calls[row["trial"]] == 1 for row in before)  # no finished trial ran again
    assert calls["trial-001"] == 2  # the interrupted one started afresh under its own id
    assert result.best.tid == 0 and result.test is not None  # the best trial alone is tested
    assert "Ray Tune restores its record" in (directory / "study.log").read_text()


@pytest.mark.slow
def test_asha_stops_the_bad_trials_at_their_first_validation_and_trials_csv_says_so(tmp_path: Path,
                                                                                     args: list[str]):
    from tests.integration.ray_runs import validating_run
    from textbox.studies.search.search import run_search

    space = tmp_path / "lr.space"
    space.write_text("learning_rate choice [0.001, 0.002, 0.3, 0.4]\n")  # two good trials first, then two bad
    result = run_search([f"--space={space}", *args, "--early_stop=asha"], runner=validating_run)
    rows = {row["trial"]: row for row in read_rows(result.directory)}
    assert {name: row["status"] for name, row in rows.items()} == {
        "trial-000": "ok", "trial-001": "ok", "trial-002": "stopped", "trial-003": "stopped"}
    for name in ("trial-002", "trial-003"):
        assert rows[name]["error"].startswith("stopped early by --early_stop=asha after validation 1 (step 2)")
        assert rows[name]["score"] == "" and float(rows[name]["valid_loss"]) > 1
    reports = {}  # Tune's own record: one result line per report the driver took
    for trial_dir in (result.directory / "tune").iterdir():
        if (trial_dir / "params.json").is_file():
            tid = json.loads((trial_dir / "params.json").read_text())["tid"]
            reports[tid] = len((trial_dir / "result.json").read_text().splitlines())
    assert reports[0] == reports[1] == 5  # four validations and the run's outcome
    assert reports[2] == reports[3] == 1  # stopped at the first
    assert result.best.tid in (0, 1) and json.loads((result.directory / "best.json").read_text())["score"] == -1.0
    assert "2 stopped early" in (result.directory / "summary.md").read_text()
