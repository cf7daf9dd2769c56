"""Optimisers and learning-rate schedules, by their TextBox names."""
from __future__ import annotations

import inspect
import math
from typing import Protocol, Sequence

import torch

from textbox.config import Config, TextBoxUserError
from textbox.trainer import schedules
from textbox.utils.suggest import suggest

_ALIASES = {"adamw": "AdamW", "adam": "Adam", "sgd": "SGD", "adafactor": "Adafactor", "adagrad": "Adagrad",
            "rmsprop": "RMSprop"}
_NO_DECAY_PARTS = ("bias", "norm", "layernorm", "layer_norm", "ln_")


def torch_optimizer_names() -> dict[str, str]:
    """Lower-case name -> torch.optim class name, for every optimiser torch ships."""
    names = {name.lower(): name for name in dir(torch.optim)
             if isinstance(getattr(torch.optim, name), type)
             and issubclass(getattr(torch.optim, name), torch.optim.Optimizer) and name != "Optimizer"}
    return {**names, **_ALIASES}


def parameter_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """Split parameters so weight decay never touches biases and normalisation weights."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        lowered = name.lower()
        if param.ndim < 2 or any(part in lowered for part in _NO_DECAY_PARTS):
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(config: Config, model: torch.nn.Module) -> torch.optim.Optimizer:
    names = torch_optimizer_names()
    key = config.optimizer.lower()
    if key not in names:
        raise TextBoxUserError(f"--optimizer: unknown optimizer {config.optimizer!r}{suggest(key, names)}; "
                               f"available: {', '.join(sorted(names))}")
    optimizer_class = getattr(torch.optim, names[key])
    groups = parameter_groups(model, config.weight_decay)
    kwargs = {"lr": config.learning_rate, **_fused_on_cpu(optimizer_class, groups, config.optimizer_kwargs),
              **config.optimizer_kwargs}
    try:
        return optimizer_class(groups, **kwargs)
    except TypeError as error:
        raise TextBoxUserError(f"--optimizer_kwargs={config.optimizer_kwargs!r} do not fit "
                               f"torch.optim.{names[key]}: {error}") from error


def _fused_on_cpu(optimizer_class: type, groups: list[dict], asked: dict) -> dict:
    """``{"fused": True}`` where torch has a fused kernel for the optimiser (Adam, AdamW, SGD, Adagrad) and every
    trained parameter is a plain floating-point CPU tensor, unless optimizer_kwargs chooses an implementation
    (``fused`` or ``foreach``). On CPU torch otherwise runs one parameter at a time, which weighs most where the
    matrix products are fast (bf16): docs/speedups.md has the figures. CUDA keeps torch's own choice."""
    if "fused" in asked or "foreach" in asked or "fused" not in inspect.signature(optimizer_class).parameters:
        return {}
    parameters = [parameter for group in groups for parameter in group["params"]]
    plain_cpu = all(type(parameter) is torch.nn.Parameter and parameter.device.type == "cpu"
                    and parameter.is_floating_point() for parameter in parameters)
    return {"fused": True} if parameters and plain_cpu else {}


class LearningRateSchedule(Protocol):
    """What the Trainer uses of a schedule: torch's LRScheduler (build_scheduler), or accelerate's wrapper of a
    DeepSpeed engine's own (textbox.trainer.sharding)."""

    def step(self) -> None: ...

    def get_last_lr(self) -> Sequence[float | torch.Tensor]: ...


def warmup_steps(config: Config, total_steps: int) -> int:
    return config.warmup_steps or math.ceil(config.warmup_ratio * total_steps)


def build_scheduler(config: Config, optimizer: torch.optim.Optimizer,
                    total_steps: int) -> torch.optim.lr_scheduler.LRScheduler:
    """The --scheduler schedule (textbox.trainer.schedules), with warm-up from warmup_steps or warmup_ratio."""

    return schedules.build(config.scheduler, optimizer, warmup_steps(config, total_steps), total_steps,
                           config.scheduler_kwargs, config.learning_rate)
