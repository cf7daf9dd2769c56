"""The tracker's names and final figures, and the tracker problems found before anything runs. The trackers fed by
a real run: tests/integration/test_trackers.py."""
from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from textbox.config import load_config
from textbox.pipeline import processes
from textbox.pipeline.trackers import _init_kwargs, final_figures, tracker_run
from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, problems, run_in_process


def test_project_is_the_key_else_the_trackers_variable_else_textbox_and_the_name_the_run_directory(tmp_path,
                                                                                                  monkeypatch):
    monkeypatch.setenv("WANDB_PROJECT", "from-wandb")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-mlflow")
    monkeypatch.delenv("WANDB_DIR", raising=False)
    run_dir = tmp_path / "run-7"
    wandb = tracker_run(load_config(["--tracker=wandb"]), run_dir)
    assert (wandb.project, wandb.name) == ("from-wandb", "run-7")
    assert _init_kwargs(wandb, run_dir) == {"wandb": {"name": "run-7", "dir": str(run_dir)}}
    mlflow = tracker_run(load_config(["--tracker=mlflow", "--tracker_run_name=lr-1e-4"]), run_dir)
    assert (mlflow.project, mlflow.name) == ("from-mlflow", "lr-1e-4")
    assert _init_kwargs(mlflow, run_dir) == {"mlflow": {"run_name": "lr-1e-4"}}
    assert tracker_run(load_config(["--tracker=tensorboard"]), run_dir).project == "textbox"  # no variable of its own
    assert tracker_run(load_config(["--tracker=wandb", "--tracker_project=mypaper"]), run_dir).project == "mypaper"
    monkeypatch.delenv("WANDB_PROJECT")
    assert tracker_run(load_config(["--tracker=wandb"]), run_dir).project == "textbox"
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))  # wandb's own setting of where its files go is kept
    assert _init_kwargs(wandb, run_dir) == {"wandb": {"name": "run-7"}}


def test_final_figures_are_the_test_figures_and_the_best_validation():
    results = {"test": {"bleu": 12.5, "loss": 2.0}, "valid": {"bleu": 11.0}, "best_step": 40, "steps": 60,
               "train_seconds": 3.0, "metric_details": {"bleu": {"bp": 1.0}}}
    assert final_figures(results) == {"test/bleu": 12.5, "test/loss": 2.0, "best/step": 40, "best/valid_bleu": 11.0}
    assert final_figures({"test": {"bleu": 3.0}, "best_step": None}) == {"test/bleu": 3.0}  # nothing trained


def test_tracker_names_that_say_nothing_or_name_no_folder_are_refused():
    assert problems("--tracker_project=my/paper") == [
        "--tracker_project must not contain any of / \\ # ? % : (wandb refuses them; TensorBoard's events go to the "
        "folder <run dir>/<project>), got 'my/paper'"]
    assert problems("--tracker_run_name= ") == ["--tracker_run_name must not be empty (None: the default)"]
    assert problems("--tracker_project=my-paper", "--tracker_run_name=lr 1e-4") == []
    assert problems("--tracker=neptune") == ["--tracker must be one of 'tensorboard', 'wandb', 'mlflow', 'none', "
                                             "got 'neptune'"]


def test_a_missing_tracker_package_is_one_error_line_before_anything_is_built(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(processes, "find_spec", lambda name: None if name == "wandb"
                        else find_spec(name))  # as on a machine without the extra 'trackers'; accelerate unaffected
    args = [arg for arg in TINY_MODEL_ARGS if not arg.startswith("--tracker=")]
    data = make_copy_dataset(tmp_path / "copy", {"train": 4, "valid": 2, "test": 2})
    code = run_in_process([*args, "--tracker=wandb", "--dataset=copy", f"--data_path={data}",
                           f"--saved_dir={tmp_path / 'saved'}"], cwd=tmp_path)
    errors = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
    assert code == 2
    assert errors == ["error: --tracker=wandb needs the wandb package: pip install wandb (or pip install "
                      "'textbox[trackers]'; or --tracker=tensorboard / none)"]
    assert not Path(tmp_path / "saved").exists()


def test_the_trainer_names_of_the_run_name_and_project_point_to_the_tracker_keys():
    assert "did you mean 'tracker_run_name'" in problems("--run_name=lr-1e-4")[0]  # HF's TrainingArguments
    assert "did you mean 'tracker_project'" in problems("--wandb_project=mypaper")[0]


def test_tracker_names_beside_no_tracker_are_said_unused():
    """A yaml may name the project while the command line turns the tracker off: a log line, not silence."""
    import logging
    from types import SimpleNamespace

    from textbox.pipeline.trackers import start_trackers

    lines: list[str] = []
    logger = logging.getLogger("test-trackers")
    logger.addHandler(type("Keep", (logging.Handler,), {"emit": lambda self, record: lines.append(record.getMessage())})())
    logger.setLevel(logging.INFO)
    run = SimpleNamespace(config=load_config(["--tracker=none", "--tracker_project=mypaper"]), logger=logger)
    start_trackers(run)  # type: ignore[arg-type]
    assert lines == ["--tracker_project unused: --tracker=none logs to no tracker"]
