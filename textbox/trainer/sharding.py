"""Sharded training through accelerate (FSDP, DeepSpeed ZeRO): what changes for the Trainer.

- Devices: accelerate turns FSDP and DeepSpeed on only for GPU processes; on CPU processes (`Accelerator(cpu=True)`,
  DistributedType.MULTI_CPU) it drops the request without a word and trains plain DDP.
  textbox.pipeline.processes.build_accelerator says so and stops the run instead (accelerate 1.15 / torch 2.13:
  state.py enables FSDP only for MULTI_GPU-like types and DeepSpeed only when not cpu).
- Optimiser and schedule: the engine's own when the DeepSpeed config defines them (accelerate's DummyOptim and
  DummyScheduler stand in until prepare), else ours; model, optimiser and (engine) schedule prepared together.
- Checkpoints: the weights of a sharded model live on every process; accelerator.get_state_dict gathers the full
  state (a collective; DeepSpeed ZeRO-3 needs stage3_gather_16bit_weights_on_model_save, configs/accelerate/
  deepspeed_zero3.yaml sets it) and the main process writes it with save_pretrained, so checkpoint_best loads with
  from_pretrained as after DDP.
- Resume: accelerate's save_state/load_state write and read the engine's (or FSDP's) own files.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch

from textbox.config import Config
from textbox.trainer.optim import (LearningRateSchedule, build_optimizer, build_scheduler, parameter_groups,
                                  warmup_steps)

if TYPE_CHECKING:
    from accelerate import Accelerator


def is_sharded(accelerator: Accelerator) -> bool:
    from accelerate.utils import DistributedType

    return accelerator.distributed_type in (DistributedType.FSDP, DistributedType.DEEPSPEED)


def prepare_training(config: Config, accelerator: Accelerator, model: torch.nn.Module,
                     total_steps: int) -> tuple[torch.nn.Module, torch.optim.Optimizer, LearningRateSchedule]:
    """Model, optimiser and learning-rate schedule, prepared by accelerate (the engine's own optimiser and schedule
    under DeepSpeed when its config defines them)."""
    engine = _deepspeed_settings(accelerator)
    if engine is None:
        optimizer = build_optimizer(config, model)
        model, optimizer = accelerator.prepare(model, optimizer)
        return model, optimizer, build_scheduler(config, optimizer, total_steps)
    from accelerate.utils import DummyOptim, DummyScheduler

    _fill_auto(engine, "train_micro_batch_size_per_gpu", config.train_batch_size)  # no loader in this prepare
    _fill_auto(engine, "gradient_clipping", config.grad_clip or 0.0)  # clipping is the engine's under DeepSpeed
    if "optimizer" in engine:
        optimizer = DummyOptim(parameter_groups(model, config.weight_decay), lr=config.learning_rate,
                               weight_decay=config.weight_decay)
    else:
        optimizer = build_optimizer(config, model)
    if "scheduler" in engine:
        scheduler = DummyScheduler(optimizer, total_num_steps=total_steps,
                                   warmup_num_steps=warmup_steps(config, total_steps))
        return accelerator.prepare(model, optimizer, scheduler)
    model, optimizer = accelerator.prepare(model, optimizer)
    return model, optimizer, build_scheduler(config, optimizer, total_steps)


def full_state_dict(accelerator: Accelerator, model: torch.nn.Module) -> dict[str, torch.Tensor] | None:
    """Collective under FSDP/DeepSpeed: the whole model's state on the main process. None when the model is not
    sharded (the unwrapped module saves itself)."""
    if not is_sharded(accelerator):
        return None
    return accelerator.get_state_dict(model)


def save_full_model(accelerator: Accelerator, model: torch.nn.Module, directory: Path,
                    state: dict[str, torch.Tensor]) -> None:
    """save_pretrained of the unwrapped model with the gathered ``state`` (main process only)."""
    accelerator.unwrap_model(model).save_pretrained(Path(directory), state_dict=state)


def _deepspeed_settings(accelerator: Accelerator) -> dict[str, object] | None:
    from accelerate.utils import DistributedType

    if accelerator.distributed_type != DistributedType.DEEPSPEED:
        return None
    return accelerator.state.deepspeed_plugin.deepspeed_config


def _fill_auto(settings: dict[str, object], key: str, value: object) -> None:
    if settings.get(key, "auto") == "auto":
        settings[key] = value
