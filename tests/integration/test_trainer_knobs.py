"""Whole runs, in-process (no interpreter start-up per run): the tracker writes into the run directory, the log
reads well, and `--model_path=<run dir>` continues an interrupted run to the uninterrupted run's exact end."""
from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path

import pytest
import torch

from textbox.config import RunInterrupted, load_config
from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset

pytestmark = pytest.mark.slow

STEPS = 12  # 96 examples in batches of 8, one epoch
INTERRUPT_AT = 5


def _args(work: Path, filename: str, *extra: str) -> list[str]:
    tiny = [arg for arg in TINY_MODEL_ARGS if not arg.startswith("--tracker=")]
    return [*tiny, f"--data_path={work / 'copy'}", "--dataset=copy", "--epochs=1", "--valid_strategy=step",
            "--valid_steps=4", "--logging_steps=1", f"--saved_dir={work / 'saved'}", f"--cache_dir={work / 'cache'}",
            f"--filename={filename}", *extra]


def _run(argv: list[str]) -> dict:
    from textbox.pipeline import run

    return run(load_config(argv))


def _signal_self_at_step(step: int):
    """Wrap Trainer._log_train so that the run receives SIGTERM right after logging ``step``."""
    from textbox.trainer.loop import Trainer

    log_train = Trainer._log_train

    def log_then_signal(self, window, scheduler, total_steps, epoch):
        log_train(self, window, scheduler, total_steps, epoch)
        if self.state.step == step:
            os.kill(os.getpid(), signal.SIGTERM)

    return log_then_signal


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """'whole': default tracker, uninterrupted. 'cut': --tracker=none, SIGTERM at step 5, then continued with
    nothing but --model_path=<its run directory>."""
    from accelerate.state import AcceleratorState, GradientState

    from textbox.trainer.loop import Trainer

    work = tmp_path_factory.mktemp("knobs")
    make_copy_dataset(work / "copy")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is fastest, and robust on busy cores
    try:
        _run(_args(work, "whole"))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Trainer, "_log_train", _signal_self_at_step(INTERRUPT_AT))
            with pytest.raises(RunInterrupted) as interrupted:
                _run(_args(work, "cut", "--tracker=none"))
        assert interrupted.value.exit_code == 128 + signal.SIGTERM
        assert f"--model_path={work / 'saved' / 'cut'}" in str(interrupted.value)
        _run([f"--model_path={work / 'saved' / 'cut'}"])
    finally:
        torch.set_num_threads(threads)
        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()
    return {"whole": work / "saved" / "whole", "cut": work / "saved" / "cut"}


def _train_rows(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [row for row in rows if row["split"] == "train"]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_tensorboard_events_are_written_into_the_run_directory_by_default(runs):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tracker_dir = runs["whole"] / "textbox"  # accelerate's TensorBoard tracker: <logging_dir>/<project name>
    assert list(tracker_dir.glob("events.out.tfevents.*")), "no TensorBoard event file in the run directory"
    scalars = EventAccumulator(str(tracker_dir)).Reload()
    assert [event.step for event in scalars.Scalars("train/loss")] == list(range(1, STEPS + 1))
    assert [event.step for event in scalars.Scalars("valid/loss")] == [4, 8, 12]


def test_tracker_none_writes_no_event_files(runs):
    assert not list(runs["cut"].rglob("events.out.tfevents.*"))


def test_metrics_jsonl_has_a_line_for_every_log_step(runs):
    assert [row["step"] for row in _train_rows(runs["whole"])] == list(range(1, STEPS + 1))


def test_the_log_shows_config_parameters_throughput_eta_and_the_final_table(runs):
    log = (runs["whole"] / "project.log").read_text()
    assert "config (keys that differ from the defaults, and where they were set):" in log
    assert "  dataset = 'copy'  (command line)" in log
    assert "mixed precision no" in log
    assert " parameters, " in log and " trainable" in log
    assert "examples/s" in log and "target tokens/s" in log and "ETA 0:00:" in log
    table = log[log.index("split  figure"):]
    assert "valid  loss" in table and "test   bleu" in table


def test_model_path_to_an_interrupted_run_continues_it_exactly(runs):
    """Same per-step losses and bit-identical final weights as the uninterrupted run."""
    cut_log = (runs["cut"] / "project.log").read_text()
    assert f"resumed from {runs['cut'] / 'checkpoint_last'}: step {INTERRUPT_AT}" in cut_log
    assert _train_rows(runs["cut"])[INTERRUPT_AT]["step"] == INTERRUPT_AT + 1  # nothing logged twice
    losses = {name: [(row["step"], row["loss"]) for row in _train_rows(path)] for name, path in runs.items()}
    assert losses["cut"] == losses["whole"]
    for name in ("checkpoint_last/model.safetensors", "checkpoint_best/model.safetensors"):
        assert _digest(runs["cut"] / name) == _digest(runs["whole"] / name), name
    results = {name: json.loads((path / "results.json").read_text()) for name, path in runs.items()}
    assert results["cut"]["test"] == results["whole"]["test"]
    assert results["cut"]["steps"] == results["whole"]["steps"] == STEPS
