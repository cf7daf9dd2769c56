"""FSDP and DeepSpeed ZeRO through accelerate's config files under configs/accelerate/.

On CPU processes accelerate 1.15 drops FSDP and DeepSpeed without a word (it turns them on only for GPU
distribution types); TextBox refuses such a launch (exit 2, nothing written). The real runs need 2 CUDA GPUs
(and DeepSpeed installed): they skip here with the reason."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT
from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_script, run_two_processes

pytestmark = pytest.mark.slow
CONFIGS = PROJECT_ROOT / "configs" / "accelerate"


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def test_fsdp_asked_on_cpu_exits_2_before_writing(tmp_path: Path):
    data = make_copy_dataset(tmp_path / "copy")
    done = run_script([*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--max_steps=2"], cwd=tmp_path,
                      env={"ACCELERATE_USE_FSDP": "true", "FSDP_VERSION": "2", "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "error: the launcher asks for FSDP" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "saved").exists()


def test_deepspeed_accumulation_conflict_exits_2_naming_both(tmp_path: Path):
    settings = tmp_path / "ds.json"
    settings.write_text('{"gradient_accumulation_steps": 4, "zero_optimization": {"stage": 2}}')
    done = run_script(["--accumulation_steps=2", "--max_steps=2"], cwd=tmp_path,
                      env={"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_CONFIG_FILE": str(settings)})
    assert done.returncode == 2
    assert f"--accumulation_steps=2 and gradient_accumulation_steps=4 in DeepSpeed config {settings}" in done.stderr
    assert not (tmp_path / "saved").exists()


def _launch(config_file: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config_file),
                "--num_processes", "2"]
    return run_two_processes(args, cwd, launcher=launcher, cpu=False)


def _train_and_check(config_file: Path, tmp_path: Path) -> None:
    """Train with validation and test under the sharded engine; checkpoint_best is a whole model."""
    from transformers import AutoModelForSeq2SeqLM

    data = make_copy_dataset(tmp_path / "copy")
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--max_steps=8", "--valid_steps=4",
            "--valid_strategy=step", "--metrics_for_best_model=['bleu']", "--filename=run"]
    done = _launch(config_file, args, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    run = tmp_path / "saved" / "run"
    model = AutoModelForSeq2SeqLM.from_pretrained(run / "checkpoint_best")
    assert model.config.d_model == 32
    assert len((run / "generation.txt").read_text().splitlines()) == 13
    assert (run / "valid_generation.txt").is_file()
    sharded = config_file.name != "deepspeed_zero2.yaml"  # ZeRO-2 keeps the whole model on every process
    assert ("the weights are split over the processes" in (run / "project.log").read_text()) is sharded
    resumed = _launch(config_file, [*args, "--resume=True", "--max_steps=12"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from" in (run / "project.log").read_text()


@pytest.mark.cuda
@pytest.mark.skipif(_gpus() < 2, reason="accelerate 1.15 runs FSDP on CUDA processes only (on CPU processes it "
                                        "trains plain DDP without a word); this needs 2 GPUs")
def test_fsdp_on_two_gpus(tmp_path: Path):
    _train_and_check(CONFIGS / "fsdp.yaml", tmp_path)


@pytest.mark.cuda
@pytest.mark.skipif(_gpus() < 2 or importlib.util.find_spec("deepspeed") is None,
                    reason="DeepSpeed is not installed and needs CUDA GPUs (2 here)")
@pytest.mark.parametrize("stage", ["deepspeed_zero2.yaml", "deepspeed_zero3.yaml"])
def test_deepspeed_on_two_gpus(tmp_path: Path, stage: str):
    _train_and_check(CONFIGS / stage, tmp_path)
