"""The pipeline's set-up decisions: trackers, devices (--gpu_id), and the config summary of the log (the
launcher's precision and gpu_id list: tests/unit/config/test_launcher.py)."""
from __future__ import annotations

import os
from importlib.util import find_spec

import pytest
import torch

from textbox.config import TextBoxUserError, load_config
from textbox.config.launcher import Launch, agreed_launch
from textbox.pipeline import processes
from textbox.pipeline.processes import build_accelerator, check_gpu_ids, export_gpu_id
from textbox.pipeline.run_dir import config_summary


def _launched(arguments: list[str]) -> tuple:
    """build_accelerator's arguments for a command line, as the recipe makes them."""
    config = load_config(arguments)
    return config, agreed_launch(config)


@pytest.mark.skipif(torch.cuda.is_available(), reason="sharded training is allowed where CUDA exists")
def test_fsdp_or_deepspeed_on_cpu_is_refused_not_dropped(monkeypatch):
    config = load_config([])
    with pytest.raises(TextBoxUserError, match=r"asks for FSDP .* no CUDA GPU is visible: accelerate runs sharded "
                                               r"training on GPU processes only and would silently train plain DDP"):
        build_accelerator(config, Launch(None, "no", "FSDP (--use_fsdp / distributed_type: FSDP)"))
    monkeypatch.setenv("LOCAL_RANK", "1")
    with pytest.raises(TextBoxUserError, match="asks for DeepSpeed") as second:
        build_accelerator(config, Launch(None, "no", "DeepSpeed (--use_deepspeed / distributed_type: DEEPSPEED)"))
    assert second.value.shown_elsewhere  # every process finds it; each machine's first prints it


@pytest.mark.skipif(torch.cuda.is_available(), reason="fp16 is allowed where CUDA exists")
def test_fp16_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ACCELERATE_MIXED_PRECISION", raising=False)
    with pytest.raises(TextBoxUserError, match="--mixed_precision=fp16 needs a CUDA GPU; on CPU use "
                                               "--mixed_precision=bf16"):
        build_accelerator(*_launched(["--mixed_precision=fp16"]))


def test_bf16_accelerator_on_cpu_autocasts_to_bf16(monkeypatch, fresh_accelerate_state):
    monkeypatch.delenv("ACCELERATE_MIXED_PRECISION", raising=False)
    accelerator = build_accelerator(*_launched(["--mixed_precision=bf16", "--tracker=none"]))
    assert accelerator.mixed_precision == "bf16"
    with accelerator.autocast():
        assert torch.nn.Linear(2, 2)(torch.ones(1, 2)).dtype == torch.bfloat16


@pytest.mark.parametrize("tracker, package", [("wandb", "wandb"), ("mlflow", "mlflow-skinny")])
def test_a_tracker_that_is_not_installed_is_a_clear_error(tracker, package, monkeypatch):
    monkeypatch.setattr(processes, "find_spec", lambda name: None if name == tracker
                        else find_spec(name))  # as on a machine without the extra 'trackers'; accelerate unaffected
    with pytest.raises(TextBoxUserError, match=f"--tracker={tracker} needs the {package} package: "
                                               f"pip install {package} \\(or pip install 'textbox\\[trackers\\]'"):
        build_accelerator(*_launched([f"--tracker={tracker}"]))


def test_config_summary_lists_changed_keys_with_their_source():
    summary = config_summary(load_config(["--learning_rate=0.5", "--seed=2020"]))
    lines = summary.splitlines()
    assert "  learning_rate = 0.5  (command line)" in lines
    assert not any(line.startswith("  seed =") for line in lines)  # set, but to its default
    # a dict merged from two layers names the layer of each entry
    kwargs = next(line for line in lines if line.startswith("  config_kwargs = "))
    assert "d_model" in kwargs and "configs/model/transformer.yaml" in kwargs
    assert "dropout: " in kwargs and "configs/dataset/pydoc_keywords.yaml" in kwargs


def test_gpu_ids_that_all_exist_pass():
    check_gpu_ids(["0", "1"], visible=2, machine=2)
    check_gpu_ids(["1"], visible=1, machine=None)  # NVML unavailable: CUDA's own count decides


@pytest.mark.parametrize("ids, visible, machine, message", [
    (["5"], 0, 2, r"--gpu_id=5 names device\(s\) that do not exist: this machine has 2 CUDA device\(s\), ids 0, 1"),
    (["0", "5"], 1, 2, r"--gpu_id=0,5 names device\(s\) that do not exist: this machine has 2 CUDA device\(s\)"),
    (["0"], 0, 0, "--gpu_id=0, but no CUDA device is visible on this machine; drop --gpu_id to run on the CPU"),
    (["0"], 0, None, r"--gpu_id=0 names device\(s\) that do not exist: CUDA sees 0 of them .*drop --gpu_id"),
    (["0", "3"], 1, None, r"--gpu_id=0,3 names device\(s\) that do not exist: CUDA sees 1 of them"),
])
def test_gpu_ids_naming_missing_devices_are_an_error(ids, visible, machine, message):
    with pytest.raises(TextBoxUserError, match=message):
        check_gpu_ids(ids, visible=visible, machine=machine)


def test_gpu_id_on_a_cpu_only_torch_says_to_drop_it():
    with pytest.raises(TextBoxUserError, match="--gpu_id=5, but this torch is a CPU-only build: no CUDA device is "
                                               "visible; drop --gpu_id to run on the CPU"):
        check_gpu_ids(["5"], visible=0, machine=0, cuda_build=False)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA devices")
def test_gpu_id_on_this_cpu_machine_is_refused_after_the_export(monkeypatch):
    """The real path: CUDA_VISIBLE_DEVICES is set first, then the devices are counted (none here)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(TextBoxUserError, match="--gpu_id=5, but .*no CUDA device is visible"):
        export_gpu_id(["5"])
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "5"
