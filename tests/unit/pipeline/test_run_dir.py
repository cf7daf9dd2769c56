"""The run directory: unwritable or too full disks are reported before training. (--model_path=<run dir>
continuing that run is resolved by the config loader: tests/unit/config/test_run_layers.py.)"""
from __future__ import annotations

import os
import shutil
import subprocess
from collections import namedtuple
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from textbox.config import TextBoxUserError
from textbox.pipeline import run_dir as run_dirs
from tests.unit.trainer.tiny import trainer_config


@contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """Make ``directory`` unwritable, also for root (which ignores permissions but not the immutable flag)."""
    directory.chmod(0o555)
    as_root = os.geteuid() == 0
    if as_root and subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode != 0:
        directory.chmod(0o755)
        pytest.skip("running as root on a file system without chattr +i: cannot make a directory read-only")
    try:
        yield
    finally:
        if as_root:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
        directory.chmod(0o755)


def _plan_and_make(config, accelerator):
    """The pipeline's two steps: the run directory named and checked, then created."""
    run_dir = run_dirs.plan_run_dir(config, accelerator)
    run_dirs.make_run_dir(run_dir, config, accelerator)
    return run_dir


def test_a_read_only_saved_dir_is_reported_before_anything_runs(tmp_path, make_accelerator):
    saved = tmp_path / "saved"
    saved.mkdir()
    config = trainer_config(saved_dir=str(saved), filename="run")
    with read_only(saved), pytest.raises(TextBoxUserError) as caught:
        _plan_and_make(config, make_accelerator())
    assert str(caught.value).startswith(f"--saved_dir={saved}: cannot write the run directory {saved / 'run'}")
    assert "choose a writable --saved_dir" in str(caught.value)


def test_a_read_only_run_directory_to_resume_is_reported(tmp_path, make_accelerator):
    run = tmp_path / "saved" / "run"
    (run / "checkpoint_last").mkdir(parents=True)  # a run to continue
    config = trainer_config(saved_dir=str(run.parent), filename="run", resume=True)
    with read_only(run), pytest.raises(TextBoxUserError, match="cannot write the run directory"):
        _plan_and_make(config, make_accelerator())


def test_a_writable_run_directory_is_created_and_left_clean(tmp_path, make_accelerator):
    config = trainer_config(saved_dir=str(tmp_path / "saved"), filename="run")
    run = _plan_and_make(config, make_accelerator())
    assert run == tmp_path / "saved" / "run" and run.is_dir() and not any(run.iterdir())


def test_too_little_free_space_is_reported_with_both_sizes(tmp_path, make_accelerator, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(2**30, 2**30 - 2**20, 2**20))
    with pytest.raises(TextBoxUserError, match=f"{tmp_path} has 1.0 MiB free but this run's checkpoints need "
                                               f"about 8.0 MiB"):
        run_dirs.check_free_space(tmp_path, 8 * 2**20, make_accelerator())
    run_dirs.check_free_space(tmp_path, 2**19, make_accelerator())  # enough: no error



def test_free_space_of_a_run_directory_not_made_yet_is_its_nearest_existing_directorys(tmp_path, make_accelerator,
                                                                                       monkeypatch):
    usage = namedtuple("usage", "total used free")
    asked = []
    monkeypatch.setattr(shutil, "disk_usage", lambda path: asked.append(path) or usage(2**30, 2**30 - 2**20, 2**20))
    with pytest.raises(TextBoxUserError, match=f"{tmp_path} has 1.0 MiB free"):
        run_dirs.check_free_space(tmp_path / "saved" / "run", 8 * 2**20, make_accelerator())
    assert asked == [tmp_path]

def test_peak_checkpoint_bytes_counts_every_copy_on_disk_at_once():
    assert run_dirs.peak_checkpoint_bytes(100, max_save=2, validations=10) == 800  # best x2, last (+ 2 moments) x2
    assert run_dirs.peak_checkpoint_bytes(100, max_save=5, validations=10) == 1200  # and 3 + 1 checkpoint-<step>
    assert run_dirs.peak_checkpoint_bytes(100, max_save=5, validations=2) == 1000  # only 2 are ever written


def test_peak_checkpoint_bytes_counts_what_max_save_0_and_1_and_save_optimizer_keep():
    """checkpoint_best (twice while replaced) alone with max_save 0 or 1; checkpoint_last without the two moments."""
    assert run_dirs.peak_checkpoint_bytes(100, max_save=1, validations=10) == 200
    assert run_dirs.peak_checkpoint_bytes(100, max_save=0, validations=10) == 200  # the test pass reads it
    assert run_dirs.peak_checkpoint_bytes(100, max_save=2, validations=10, save_optimizer=False) == 400
    assert run_dirs.peak_checkpoint_bytes(100, max_save=5, validations=10, save_optimizer=False) == 800


def test_max_save_minus_one_counts_the_checkpoint_of_every_validation_the_run_will_do():
    """Was: -1 counted as one checkpoint-<step>, so a run validating 40 times passed the check and filled the disk."""
    assert run_dirs.peak_checkpoint_bytes(100, max_save=-1, validations=40) == 800 + 40 * 100
    assert run_dirs.peak_checkpoint_bytes(100, max_save=-1, validations=0) == 800


@pytest.mark.parametrize("changes, per_epoch, validations", [
    ({"epochs": 3}, 10, 3),  # each epoch, the last one's at the end
    ({"epochs": 3, "valid_steps": 2}, 10, 2),  # epoch 2, and the final model
    ({"epochs": 4, "valid_steps": 2}, 10, 2),
    ({"valid_strategy": "step", "valid_steps": 4, "epochs": 2}, 10, 5),  # steps 4, 8, 12, 16, and 20
    ({"valid_strategy": "step", "valid_steps": 5, "epochs": 2}, 10, 4),
    ({"max_steps": 25, "epochs": 9}, 10, 3),  # epochs 1 and 2, then step 25
    ({"do_valid": False, "epochs": 3}, 10, 0),
])
def test_planned_validations_are_the_training_loops(changes, per_epoch, validations):
    from textbox.trainer.checkpoint import planned_validations

    assert planned_validations(trainer_config(**changes), per_epoch) == validations
