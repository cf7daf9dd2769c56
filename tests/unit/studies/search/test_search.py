"""The search loop with a fake pipeline: direction of the objective, failed trials, test of the best
trial only, resume after an interruption, parallel workers, and the errors given before any trial runs."""
from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
from pathlib import Path

import pytest

import run_hyper
from tests.helpers import fresh_python_prints, make_toy_dataset
from textbox.config import ConfigError, RunInterrupted, TextBoxError, TextBoxUserError
from textbox.studies.search.search import run_search

SPACE = "learning_rate choice [0.001, 0.002, 0.003]  # 3 x 2 grid\ntrain_batch_size choice [8, 16]\n"
CALLS: list[dict] = []


def figure_of(config) -> float:
    """A validation figure that is a known function of the point: 9 (0.001, 8) .. 19 (0.003, 16)."""
    return config.learning_rate * 1000 + config.train_batch_size


def fake_run(config) -> dict:
    """Stands in for pipeline.run: a fresh run directory, checkpoint_best when training, figures from the point."""
    run_dir = Path(config.saved_dir) / config.filename
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(config.to_yaml())  # as pipeline.run writes it (says the model family)
    CALLS.append({"filename": config.filename, "do_test": config.do_test, "model_path": config.model_path,
                  "point": (config.learning_rate, config.train_batch_size)})
    if not config.do_train:
        return {"test": {"loss": figure_of(config) + 100, "bleu": figure_of(config) + 100}, "run_dir": str(run_dir)}
    (run_dir / "checkpoint_best").mkdir()
    return {"valid": {"loss": figure_of(config), "bleu": figure_of(config)}, "best_step": 1, "steps": 2,
            "run_dir": str(run_dir)}


def failing_run(config) -> dict:
    """(0.002, 8) raises, (0.002, 16) gives NaN; the others run normally."""
    if config.learning_rate == 0.002 and config.train_batch_size == 8:
        raise ValueError("diverged")
    results = fake_run(config)
    if config.learning_rate == 0.002 and config.do_train:
        results["valid"]["loss"] = math.nan
    return results


def dying_run(config) -> dict:
    """A worker killed without an exception (as the kernel's OOM killer would)."""
    os._exit(9)


def interrupted_run(config) -> dict:
    """Ctrl-C while the third trial runs (its directory already holds files)."""
    if config.filename == "trial-002":
        (Path(config.saved_dir) / config.filename).mkdir(parents=True)
        (Path(config.saved_dir) / config.filename / "project.log").write_text("interrupted\n")
        raise KeyboardInterrupt
    return fake_run(config)


@pytest.fixture
def search_args(tmp_path: Path) -> list[str]:
    CALLS.clear()
    data = make_toy_dataset(tmp_path / "data")
    space = tmp_path / "grid.space"
    space.write_text(SPACE)
    return [f"--space={space}", f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}", "--filename=search"]


def read_trials(directory: Path) -> list[dict]:
    with open(directory / "trials.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("names, best_point", [(["loss"], (0.001, 8)), (["bleu"], (0.003, 16))])
def test_the_best_trial_is_chosen_on_validation_in_the_right_direction_and_alone_is_tested(
        search_args, names, best_point):
    result = run_search([*search_args, "--algo=exhaustive", f"--metrics_for_best_model={names}"], runner=fake_run)
    trials = read_trials(result.directory)
    assert len(trials) == 6 and len({(row["learning_rate"], row["train_batch_size"]) for row in trials}) == 6
    best_figure = best_point[0] * 1000 + best_point[1]
    assert (result.best.params["learning_rate"], result.best.params["train_batch_size"]) == best_point
    assert result.best.valid["loss"] == best_figure
    assert result.test == {"loss": best_figure + 100, "bleu": best_figure + 100}
    tests = [call for call in CALLS if call["do_test"]]
    assert len(tests) == 1 and tests[0]["point"] == best_point
    assert tests[0]["model_path"] == str(result.directory / f"trial-{result.best.tid:03d}" / "checkpoint_best")
    best = json.loads((result.directory / "best.json").read_text())
    assert best["valid"]["loss"] == best_figure and best["test"]["loss"] == best_figure + 100
    assert best["objective"] == f"validation {names[0]} ({'lower' if names == ['loss'] else 'higher'} is better)"
    assert (result.directory / "search.png").read_bytes().startswith(b"\x89PNG")
    summary = (result.directory / "summary.md").read_text()
    assert summary == result.report and f"## Best: trial-{result.best.tid:03d}" in summary


def test_each_trial_is_logged_with_its_figure_as_the_user_knows_it(search_args):
    """A loss of 9 was logged as 'score -9' (the selection score: higher is better)."""
    result = run_search([*search_args, "--algo=exhaustive", "--metrics_for_best_model=['loss']"], runner=fake_run)
    log = (result.directory / "study.log").read_text()
    assert "s: loss 9 (lower is better); best so far trial-000 (loss 9)" in log and "score -" not in log
    result = run_search([*search_args[:-1], "--filename=two", "--algo=exhaustive",
                         "--metrics_for_best_model=['bleu','loss']"], runner=fake_run)
    assert "s: score 0 (bleu - loss) (higher is better)" in (result.directory / "study.log").read_text()


def test_failed_trials_are_recorded_with_their_error_and_the_search_goes_on(search_args):
    result = run_search([*search_args, "--metrics_for_best_model=['loss']"], runner=failing_run)
    trials = {(row["learning_rate"], row["train_batch_size"]): row for row in read_trials(result.directory)}
    assert len(trials) == 6
    raised, nan = trials[("0.002", "8")], trials[("0.002", "16")]
    assert raised["status"] == "failed" and raised["error"] == "ValueError: diverged" and raised["score"] == ""
    assert "raise ValueError(\"diverged\")" in (Path(raised["run_dir"]) / "error.txt").read_text()
    assert nan["status"] == "failed" and nan["error"].startswith("validation score is nan")
    assert sum(row["status"] == "ok" for row in trials.values()) == 4
    assert result.best.params == {"learning_rate": 0.001, "train_batch_size": 8}
    assert "- trial-" in result.report and "failed: ValueError: diverged" in result.report


def test_an_interrupted_search_resumes_without_repeating_finished_trials(search_args):
    with pytest.raises(RunInterrupted, match="after 2 finished trial.*plus --filename=search --resume=True") as stop:
        run_search([*search_args, "--metrics_for_best_model=['loss']"], runner=interrupted_run)
    assert stop.value.exit_code == 130
    directory = Path(search_args[2].split("=", 1)[1]) / "search"
    finished = read_trials(directory)
    assert [row["trial"] for row in finished] == ["trial-000", "trial-001"]
    CALLS.clear()
    dead_pid = int(fresh_python_prints("import os; print(os.getpid())"))  # a driver killed while writing these:
    half_written = [directory / f".trials.json.partial-{dead_pid}-0123abcd",
                    directory / f".search.png.partial-{dead_pid}-89abcdef"]
    for path in half_written:
        path.write_bytes(b"half")

    result = run_search([*search_args, "--metrics_for_best_model=['loss']", "--resume=True"], runner=fake_run)
    assert not any(path.exists() for path in half_written)  # removed when the search resumes
    rows = read_trials(result.directory)
    assert [row["trial"] for row in rows] == ["trial-000", "trial-001", "trial-003", "trial-004", "trial-005",
                                              "trial-006"]  # trial-002's directory is left as it was
    points = {(row["learning_rate"], row["train_batch_size"]) for row in rows}
    assert len(points) == 6
    rerun = {call["point"] for call in CALLS if not call["do_test"]}
    assert len(rerun) == 4 and not rerun & {(float(r["learning_rate"]), int(r["train_batch_size"])) for r in finished}
    assert (directory / "trial-002" / "project.log").read_text() == "interrupted\n"
    assert result.best.params == {"learning_rate": 0.001, "train_batch_size": 8}


def test_resume_refuses_other_settings_and_a_new_search_refuses_a_used_directory(search_args):
    run_search([*search_args, "--max_evals=2"], runner=fake_run)
    with pytest.raises(TextBoxUserError, match="already holds files; continue that search with --resume=True"):
        run_search(search_args, runner=fake_run)
    with pytest.raises(TextBoxUserError, match=r"other settings \(algo: was exhaustive, now random\)"):
        run_search([*search_args, "--algo=random", "--max_evals=4", "--resume=True"], runner=fake_run)
    result = run_search([*search_args, "--resume=True"], runner=fake_run)  # max_evals may grow: the full grid
    assert len(read_trials(result.directory)) == 6


def test_parallel_workers_run_every_grid_point_once(search_args):
    result = run_search([*search_args, "--workers=2", "--metrics_for_best_model=['bleu']"], runner=fake_run)
    rows = read_trials(result.directory)
    assert len(rows) == 6 and len({(r["learning_rate"], r["train_batch_size"]) for r in rows}) == 6
    assert all(row["status"] == "ok" for row in rows)
    assert result.best.params == {"learning_rate": 0.003, "train_batch_size": 16}


def test_a_dead_worker_process_stops_the_search_with_a_clear_error(search_args):
    with pytest.raises(TextBoxError, match="a worker process died while running .*finished runs are saved"):
        run_search([*search_args, "--workers=2"], runner=dying_run)


def test_a_label_that_is_no_config_key_fails_like_the_command_line_before_any_trial(search_args, tmp_path, capsys):
    space = tmp_path / "typo.space"
    space.write_text("learning_rte choice [0.001]\n")
    code = run_hyper.main([*search_args, f"--space={space}"])
    error = capsys.readouterr().err
    assert code == 2
    assert "unknown key --learning_rte; did you mean 'learning_rate'?" in error
    assert f"[search space {space}, sample point {{'learning_rte': 0.001}}]" in error
    assert CALLS == [] and not (tmp_path / "saved").exists()


def test_errors_given_before_any_trial(search_args, tmp_path):
    with pytest.raises(TextBoxUserError, match="--algo=tpe samples without end: give --max_evals=N"):
        run_search([*search_args, "--algo=tpe"], runner=fake_run)
    continuous = tmp_path / "continuous.space"
    continuous.write_text("learning_rate loguniform (-8, -4)\n")
    with pytest.raises(TextBoxUserError, match="'learning_rate' uses loguniform, which has no finite grid"):
        run_search([*search_args, f"--space={continuous}"], runner=fake_run)
    with pytest.raises(TextBoxUserError, match="needs --do_train=True and --do_valid=True"):
        run_search([*search_args, "--do_valid=False"], runner=fake_run)
    with pytest.raises(TextBoxUserError, match="checkpoint_best, which --max_save=0 removes .* use --max_save=1"):
        run_search([*search_args, "--max_save=0"], runner=fake_run)
    with pytest.raises(ConfigError, match="--algo must be one of"):
        run_search([*search_args, "--algo=grid"], runner=fake_run)
    assert CALLS == []


@pytest.mark.skipif(importlib.util.find_spec("lightgbm") is not None, reason="lightgbm is installed")
def test_atpe_without_its_optional_dependencies_is_a_clear_error(search_args):
    with pytest.raises(TextBoxUserError, match=r"--algo=atpe needs lightgbm .*pip install lightgbm scikit-learn"):
        run_search([*search_args, "--algo=atpe", "--max_evals=2"], runner=fake_run)


def test_a_search_where_every_trial_fails_is_an_error(search_args):
    def always_fails(config):
        raise RuntimeError("out of memory")

    with pytest.raises(TextBoxError, match="all 2 trial"):
        run_search([*search_args, "--max_evals=2"], runner=always_fails)


def test_early_stop_needs_the_ray_engine(search_args, tmp_path):
    with pytest.raises(TextBoxUserError, match="--early_stop=asha needs --engine=ray .*add --engine=ray or leave"):
        run_search([*search_args, "--early_stop=asha"], runner=fake_run)
    assert CALLS == [] and not (tmp_path / "saved").exists()


def test_a_search_resumes_on_the_engine_it_started_on_and_on_ray_as_it_was_started(tmp_path):
    from textbox.studies.search.store import ENGINE_FILE, check_engine_record

    ray = {"engine": "ray", "max_evals": 4, "early_stop": "asha"}
    check_engine_record(tmp_path, ray, resume=False)
    assert json.loads((tmp_path / ENGINE_FILE).read_text()) == ray
    check_engine_record(tmp_path, ray, resume=True)  # the same: fine
    with pytest.raises(TextBoxUserError, match="as it was started: give --max_evals=4 \\(now 6\\) and "
                                               "--early_stop=asha \\(now none\\)"):
        check_engine_record(tmp_path, {"engine": "ray", "max_evals": 6, "early_stop": "none"}, resume=True)
    with pytest.raises(TextBoxUserError, match="was searched with --engine=ray; resume it with --engine=ray"):
        check_engine_record(tmp_path, {"engine": "local", "max_evals": 4, "early_stop": "none"}, resume=True)
    local = tmp_path / "local"
    local.mkdir()
    check_engine_record(local, {"engine": "local", "max_evals": 4, "early_stop": "none"}, resume=False)
    assert not (local / ENGINE_FILE).exists()  # a local search keeps today's files only
    with pytest.raises(TextBoxUserError, match="was searched with --engine=local; resume it with --engine=local"):
        check_engine_record(local, ray, resume=True)
