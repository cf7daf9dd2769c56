"""Fake runs for Ray workers, in a module they import by its package name (pytest imports test files by
their bare name, which a Ray worker cannot). Each takes pipeline.run's ``on_validation`` keyword."""
from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

from tests.unit.studies.search.test_search import fake_run


def _count_call(config) -> None:
    """One file per call under saved_dir/calls/, named after the trial: how often each trial really ran."""
    calls = Path(config.saved_dir) / "calls"
    calls.mkdir(parents=True, exist_ok=True)
    (calls / f"{config.filename}.{uuid.uuid4().hex}").touch()


def killing_run(config, on_validation=None) -> dict:
    """The worker dies without an exception (as under the kernel's OOM killer) for lr 0.003 and seed 2021; a
    search trial dies after its first validation was reported, mid-trial."""
    if config.learning_rate == 0.003 or config.seed == 2021:
        if on_validation is not None:
            on_validation(1, {"loss": 1.0, "bleu": 1.0})
            time.sleep(1)
        os._exit(9)
    return fake_run(config)


def interrupting_run(config, on_validation=None) -> dict:
    """The first time trial-001 runs it presses Ctrl-C in the driver (pid in TEXTBOX_TEST_DRIVER_PID) a moment
    after it starts, then hangs until Tune stops it; every run is counted (_count_call)."""
    _count_call(config)
    marker = Path(config.saved_dir) / "interrupted-once"
    if config.filename == "trial-001" and not marker.exists():
        marker.touch()
        time.sleep(3)
        os.kill(int(os.environ["TEXTBOX_TEST_DRIVER_PID"]), signal.SIGINT)
        time.sleep(120)
    return fake_run(config)


def validating_run(config, on_validation=None) -> dict:
    """Four validations at steps 2, 4, 6, 8, each reported; loss 1 for learning rates below 0.01 (good trials),
    10 x the learning rate for the others (bad ones)."""
    loss = 1.0 if config.learning_rate < 0.01 else 10 * config.learning_rate
    for validation in range(1, 5):
        time.sleep(0.2)
        if on_validation is not None:
            on_validation(2 * validation, {"loss": loss})
    results = fake_run(config)
    results["valid"] = {"loss": loss}
    return results


def sleeping_run(config, on_validation=None) -> dict:
    """A run that says it has started (a file named after its worker's pid in saved_dir) and never finishes."""
    Path(config.saved_dir).mkdir(parents=True, exist_ok=True)
    (Path(config.saved_dir) / f"running-{os.getpid()}").touch()
    time.sleep(600)
    return {}


def drive_a_sleeping_seed_study(data: str, saved_dir: str) -> None:
    """A study driver (run in its own process): one seed on a local Ray instance, its run never ending."""
    from textbox.studies.seeds import run_multi_seed

    run_multi_seed(["--multi_seed=1", "--filename=seeds", "--engine=ray", f"--data_path={data}",
                    f"--saved_dir={saved_dir}"], runner=sleeping_run)
