"""--gpu_id on CUDA machines (run by benchmarks/gpu_check.sh; skipped without CUDA): it is exported as
CUDA_VISIBLE_DEVICES before CUDA starts, so it selects the device even where the environment hid every device; an id
the machine lacks stops the run (exit 2, nothing written) instead of falling back to another device or the CPU; on
two GPUs, two processes (DDP) each take their own. Two processes on one GPU are refused by the config check (one id
per process: tests/unit/config/test_launcher.py): the framework does not share a device between processes."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import TINY_MODEL_ARGS, free_port, make_copy_dataset, run_script, run_two_processes

pytestmark = [pytest.mark.cuda, pytest.mark.slow]


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _args(tmp_path: Path, *extra: str) -> list[str]:
    data = make_copy_dataset(tmp_path / "copy")
    return [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--max_steps=4", "--filename=run", *extra]


def test_gpu_id_selects_the_device_even_where_the_environment_hid_them(tmp_path: Path):
    done = run_script(_args(tmp_path, "--gpu_id=0"), cwd=tmp_path, env={"CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    log = (tmp_path / "saved" / "run" / "project.log").read_text()
    assert "1 process(es) on cuda" in log


def test_a_gpu_id_the_machine_lacks_exits_2_before_writing(tmp_path: Path):
    missing = _gpus()  # ids run from 0: this one is one past the last
    done = run_script(_args(tmp_path, f"--gpu_id={missing}"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"error: --gpu_id={missing} names device(s) that do not exist: this machine has {missing} CUDA " \
           f"device(s)" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "saved").exists()


def test_two_processes_each_take_their_gpu_id(tmp_path: Path):
    if _gpus() < 2:  # asked here, not at collection: torch stays unimported where no test runs
        pytest.skip(f"two processes on two devices need 2 GPUs; this machine has {_gpus()}")
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port",
                str(free_port())]
    done = run_two_processes(_args(tmp_path, "--gpu_id=1,0"), tmp_path, launcher=launcher, cpu=False)
    assert done.returncode == 0, done.stderr[-3000:]
    log = (tmp_path / "saved" / "run" / "project.log").read_text()
    assert "2 process(es) on cuda:0" in log  # the main process: local rank 0, the first of the ids it was given
