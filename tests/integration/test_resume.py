"""Exact resume: a run stopped by SIGTERM at some step and resumed ends bit-identical to an uninterrupted one;
kill -9 at any moment leaves loadable checkpoints."""
from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import (TINY_MODEL_ARGS, accelerate_two_cpu_processes, make_copy_dataset, run_in_process,
                           run_script_in_process, sigterm_after_step, start_script, train_losses, wait_for_step)

pytestmark = pytest.mark.slow

RUN_ARGS = [*TINY_MODEL_ARGS, "--dataset=copy", "--epochs=3", "--logging_steps=1", "--valid_strategy=step",
            "--valid_steps=10", "--train_batch_size=8", "--accumulation_steps=2", "--scheduler=linear",
            "--warmup_steps=3"]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("extra", [
    [],
    # checkpoint averaging reads the checkpoints back from disk: the resumed run averages the same weights
    ["--valid_steps=3", "--average_checkpoints=3", "--max_save=-1"],
], ids=["plain", "average_checkpoints"])
def test_sigterm_then_resume_is_bit_identical(tmp_path: Path, extra: list[str]):
    data = make_copy_dataset(tmp_path / "copy")
    args = [*RUN_ARGS, f"--data_path={data}", *extra]
    # the uninterrupted reference and the resumed run run in this process (one thread, as the interrupted run's
    # subprocess): a subprocess would add only its start-up
    assert run_in_process([*args, "--filename=whole"], cwd=tmp_path) == 0

    cut_dir = tmp_path / "saved" / "cut"
    returncode, stderr = sigterm_after_step([*args, "--filename=cut"], tmp_path, cut_dir, 4)
    assert returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert "continue with --resume=True" in stderr
    stopped_at = json.loads((cut_dir / "checkpoint_last" / "train_state.json").read_text())["step"]
    assert 4 <= stopped_at < 18  # 96 examples / (8 x 2) = 6 steps per epoch, 18 in all

    resumed = run_script_in_process([*args, "--filename=cut", "--resume=True"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    whole_dir = tmp_path / "saved" / "whole"
    assert train_losses(cut_dir) == train_losses(whole_dir)
    assert sorted(train_losses(whole_dir)) == list(range(1, 19))
    for name in ("checkpoint_last/model.safetensors", "checkpoint_best/model.safetensors"):
        assert _digest(cut_dir / name) == _digest(whole_dir / name), name
    results = [json.loads((path / "results.json").read_text()) for path in (cut_dir, whole_dir)]
    assert results[0]["test"] == results[1]["test"]
    assert results[0].get("averaged") == results[1].get("averaged")
    if extra:
        assert results[0]["averaged"]["steps"] == [12, 15, 18]


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_kill_9_at_any_moment_leaves_loadable_checkpoints(tmp_path: Path):
    """Validation (and so a save of checkpoint_best and checkpoint_last) at every step: most of the run is
    saving, so kills at spread-out moments land inside saves."""
    from transformers import AutoModelForSeq2SeqLM

    from textbox.trainer.checkpoint import find_resume_dir
    from textbox.utils.atomic import restore_interrupted

    data = make_copy_dataset(tmp_path / "copy")
    args = [*RUN_ARGS, f"--data_path={data}", "--valid_steps=1", "--filename=killed"]
    run_dir = tmp_path / "saved" / "killed"
    metrics = run_dir / "metrics.jsonl"
    process = start_script(args, cwd=tmp_path)
    wait_for_step(run_dir, 2, process)
    for delay in (0.0, 0.07, 0.15):
        process.kill()
        process.wait()
        restore_interrupted(run_dir / "checkpoint_best")
        AutoModelForSeq2SeqLM.from_pretrained(run_dir / "checkpoint_best")
        assert find_resume_dir(run_dir) is not None
        seen = _lines(metrics)
        process = start_script([*args, "--resume=True"], cwd=tmp_path)
        deadline = time.monotonic() + 120
        while _lines(metrics) <= seen and time.monotonic() < deadline:
            assert process.poll() is None, process.stderr.read()[-3000:]
            time.sleep(0.01)
        time.sleep(delay)
    process.kill()
    process.wait()
    resumed = run_script_in_process([*args, "--resume=True"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    AutoModelForSeq2SeqLM.from_pretrained(run_dir / "checkpoint_best")
    assert json.loads((run_dir / "checkpoint_last" / "train_state.json").read_text())["step"] == 18


def _two_process_launcher() -> tuple[str, ...]:
    """accelerate launch with 2 CPU processes and bf16 set by the launcher only (the config keeps its default)."""
    command = accelerate_two_cpu_processes()
    command[command.index("--mixed_precision") + 1] = "bf16"
    return tuple(command)


def test_two_processes_sigterm_then_resume_gives_the_same_run(tmp_path: Path):
    """2 processes, accumulation_steps=2: 96 examples = 6 batches of 8 per process and epoch = 3 steps per
    epoch, 9 in all. SIGTERM to the launcher mid-run, then --resume=True: the same per-step losses (same data
    order), the same final weights and metrics as the uninterrupted 2-process run."""
    data = make_copy_dataset(tmp_path / "copy", sizes={"train": 96, "valid": 16, "test": 16})
    args = [*RUN_ARGS, f"--data_path={data}", "--epochs=3", "--valid_strategy=epoch", "--valid_steps=1"]
    launcher = _two_process_launcher()

    def launch(*extra: str) -> subprocess.Popen:
        return start_script([*args, *extra], cwd=tmp_path, launcher=launcher)

    whole = launch("--filename=whole")
    _, stderr = whole.communicate(timeout=900)
    assert whole.returncode == 0, stderr[-3000:]

    cut_dir = tmp_path / "saved" / "cut"
    cut = launch("--filename=cut")
    wait_for_step(cut_dir, 2, cut)
    cut.send_signal(signal.SIGTERM)
    _, stderr = cut.communicate(timeout=600)
    assert cut.returncode != 0 and "interrupted at step" in stderr, stderr[-3000:]
    stopped_at = json.loads((cut_dir / "checkpoint_last" / "train_state.json").read_text())["step"]
    assert 2 <= stopped_at < 9, stopped_at

    resumed = launch("--filename=cut", "--resume=True")
    _, stderr = resumed.communicate(timeout=900)
    assert resumed.returncode == 0, stderr[-3000:]
    whole_dir = tmp_path / "saved" / "whole"
    first_line = (whole_dir / "project.log").read_text().splitlines()[0]
    assert "2 process(es) on cpu" in first_line and first_line.endswith("mixed precision bf16")
    assert sorted(train_losses(whole_dir)) == list(range(1, 10))
    assert train_losses(cut_dir) == train_losses(whole_dir)
    assert _digest(cut_dir / "checkpoint_last" / "model.safetensors") == \
        _digest(whole_dir / "checkpoint_last" / "model.safetensors")
    results = [json.loads((path / "results.json").read_text()) for path in (cut_dir, whole_dir)]
    assert results[0]["steps"] == results[1]["steps"] == 9
    assert results[0]["valid"] == results[1]["valid"] and results[0]["test"] == results[1]["test"]


def test_sigterm_during_the_test_pass_says_how_to_finish_it_and_resume_does(tmp_path: Path):
    """Training done, the test pass under way: SIGTERM ends the run with one line (no traceback) saying the test
    pass was interrupted and the command that finishes it, the run marked FAILED with that line, exit 128 + 15;
    that command then writes results.json and clears the mark."""
    data = make_copy_dataset(tmp_path / "copy", sizes={"train": 32, "valid": 8, "test": 400})
    # outputs of 15 tokens and more, by beam search on transformers (CTranslate2 can finish 400 examples before the
    # signal lands), one example a batch: a test pass of several seconds to land in
    args = [*TINY_MODEL_ARGS, "--dataset=copy", f"--data_path={data}", "--max_steps=2", "--eval_batch_size=1",
            "--generation_kwargs={'num_beams': 4, 'min_length': 15}", "--decoding_backend=transformers",
            "--filename=cut"]
    run_dir = tmp_path / "saved" / "cut"
    process = start_script(args, cwd=tmp_path)
    deadline = time.monotonic() + 600
    log = run_dir / "project.log"
    while not (log.is_file() and "checkpoint_best\n" in log.read_text().split("using ", 1)[-1]):
        assert process.poll() is None, process.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "the test pass never started"
        time.sleep(0.05)
    time.sleep(0.5)  # into the generation
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert "Traceback" not in stderr
    line = ("error: the test pass was interrupted by SIGTERM; training had finished and saved/cut keeps its "
            "checkpoints; finish it with --resume=True --saved_dir=saved --filename=cut")
    assert line in stderr, stderr[-3000:]
    assert line[len("error: "):] in (run_dir / "FAILED").read_text()
    assert not (run_dir / "results.json").exists()

    finished = run_script_in_process([*args, "--resume=True", "--saved_dir=saved"], cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr[-3000:]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["steps"] == 2 and "test" in results
    assert len((run_dir / "generation.txt").read_text().splitlines()) == 400
    assert not (run_dir / "FAILED").exists()
