"""Denoising pre-training end to end: pre-train a tiny transformer on the sources alone (validated and tested
by loss), fine-tune the result with --model_path, and resume an interrupted pre-training exactly."""
from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.helpers import (TINY_MODEL_ARGS, make_copy_dataset, run_in_process, run_script_in_process,
                           sigterm_after_step, train_losses)
from tests.integration.test_resume import _digest

pytestmark = pytest.mark.slow

_SENTENCES = ["the red cat sleeps.", "a dog runs home!", "is the river old?", "small birds sing.",
              "the light is dark.", "a big stone falls."]


def make_text_dataset(root: Path) -> Path:
    """Several sentences per line (so that permutation has something to do); .tgt files only for fine-tuning."""
    make_copy_dataset(root)
    for split, count in (("train", 96), ("valid", 16), ("test", 13)):
        lines = [" ".join(_SENTENCES[(i + k) % len(_SENTENCES)] for k in range(1 + i % 3)) for i in range(count)]
        (root / f"{split}.src").write_text("\n".join(lines) + "\n")
        (root / f"{split}.tgt").write_text("\n".join(line.upper() for line in lines) + "\n")
    return root


PRETRAIN_ARGS = [*TINY_MODEL_ARGS, "--tgt_len=24", "--pretrain_task=denoising", "--dataset=text"]
# 96 examples / (8 x 2) = 6 steps per epoch, 24 in all
# --do_test=True: a test loss on test.src (pre-training alone reads no test split)
WHOLE_ARGS = [*PRETRAIN_ARGS, "--do_test=True", "--epochs=4", "--logging_steps=1", "--valid_strategy=step",
              "--valid_steps=10", "--train_batch_size=8", "--accumulation_steps=2"]


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory) -> Path:
    """One uninterrupted pre-training run: the model fine-tuned below, and the run a resumed one must equal."""
    work = tmp_path_factory.mktemp("denoising")
    data = make_text_dataset(work / "text")
    # in this process (one thread, as the interrupted run's subprocess), as are the fine-tuning and the resume
    assert run_in_process([*WHOLE_ARGS, f"--data_path={data}", "--filename=whole"], cwd=work) == 0
    return work / "saved" / "whole"


def test_pretrain_then_fine_tune(pretrained: Path, tmp_path: Path):
    data = pretrained.parent.parent / "text"
    pre = pretrained
    results = json.loads((pre / "results.json").read_text())
    assert set(results["test"]) == {"loss"} and set(results["valid"]) == {"loss"}  # no generation metrics
    assert results["steps"] == 24
    log = (pre / "project.log").read_text()
    assert "denoising pre-training: train from" in log and "each source its own target" in log

    # the checkpoint's tokenizer is used as saved: --tokenizer_kwargs (how to train a new one) would be refused
    reload_args = [arg for arg in TINY_MODEL_ARGS if not arg.startswith("--tokenizer_kwargs=")]
    tuned = run_script_in_process([*reload_args, f"--data_path={data}", "--dataset=text", "--max_steps=6",
                                   f"--model_path={pre / 'checkpoint_best'}", "--filename=tuned"], cwd=tmp_path)
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    tuned_dir = tmp_path / "saved" / "tuned"
    assert len((tuned_dir / "generation.txt").read_text().split("\n")[:-1]) == 13
    assert {"bleu", "loss"} <= set(json.loads((tuned_dir / "results.json").read_text())["test"])
    for name in ("tokenizer.json", "config.json"):  # the pre-trained tokenizer and architecture carry over
        assert (tuned_dir / "checkpoint_best" / name).read_text() == (pre / "checkpoint_best" / name).read_text()


def test_interrupted_pretraining_resumes_exactly(pretrained: Path):
    work = pretrained.parent.parent  # the uninterrupted run's directory, data and caches
    args = [*WHOLE_ARGS, f"--data_path={work / 'text'}"]

    cut_dir = work / "saved" / "cut"
    returncode, stderr = sigterm_after_step([*args, "--filename=cut"], work, cut_dir, 4)
    assert returncode == 128 + signal.SIGTERM, stderr[-3000:]
    stopped_at = json.loads((cut_dir / "checkpoint_last" / "train_state.json").read_text())["step"]
    assert 4 <= stopped_at < 24  # 96 examples / (8 x 2) = 6 steps per epoch, 24 in all

    resumed = run_script_in_process([*args, "--filename=cut", "--resume=True"], cwd=work)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    whole_dir = pretrained
    assert sorted(train_losses(whole_dir)) == list(range(1, 25))
    assert train_losses(cut_dir) == train_losses(whole_dir)
    assert _digest(cut_dir / "checkpoint_last" / "model.safetensors") == \
        _digest(whole_dir / "checkpoint_last" / "model.safetensors")
    assert json.loads((cut_dir / "results.json").read_text())["test"] == \
        json.loads((whole_dir / "results.json").read_text())["test"]
