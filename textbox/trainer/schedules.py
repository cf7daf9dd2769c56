"""The learning-rate schedules --scheduler names: every schedule of transformers' get_scheduler and of
torch.optim.lr_scheduler that steps on its own, with --scheduler_kwargs for their settings.

Standard library only at import time: textbox/checks.py asks ``problems(config)`` before anything runs (settings are
checked against the schedule's signature, which imports transformers or torch only when scheduler_kwargs are given).
The schedule steps once per optimiser step; the run's total number of steps fills a torch schedule's length
(T_max, total_iters, total_steps) when scheduler_kwargs does not give it.
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # torch and transformers are imported only when a schedule is built or its settings checked
    import torch

from textbox.utils.suggest import suggest

# --scheduler -> transformers' schedule name ('constant' keeps its warm-up: transformers' constant_with_warmup)
TRANSFORMERS_SCHEDULES = {
    "constant": "constant_with_warmup", "constant_with_warmup": "constant_with_warmup", "linear": "linear",
    "cosine": "cosine", "cosine_with_restarts": "cosine_with_restarts", "polynomial": "polynomial",
    "inverse_sqrt": "inverse_sqrt", "cosine_with_min_lr": "cosine_with_min_lr",
    "cosine_warmup_with_min_lr": "cosine_warmup_with_min_lr", "warmup_stable_decay": "warmup_stable_decay",
}
# --scheduler -> torch.optim.lr_scheduler class (lower-case class names); each steps once per optimiser step
TORCH_SCHEDULES = {name.lower(): name for name in (
    "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "CyclicLR", "OneCycleLR",
    "CosineAnnealingWarmRestarts", "PolynomialLR", "LinearLR", "ConstantLR")}
# Settings a torch schedule takes from the run when scheduler_kwargs leaves them out
RUN_LENGTH = {"cosineannealinglr": "T_max", "polynomiallr": "total_iters", "onecyclelr": "total_steps"}
PEAK_RATE = ("onecyclelr", "cycliclr")  # their max_lr is --learning_rate unless scheduler_kwargs gives it
REFUSED = {
    "reduce_lr_on_plateau": "it steps on a validation figure, and the schedule here steps once per optimiser step; "
                            "use stopping_steps for early stopping, or a schedule that decays on its own",
    "reducelronplateau": "it steps on a validation figure, and the schedule here steps once per optimiser step; "
                         "use stopping_steps for early stopping, or a schedule that decays on its own",
    "lambdalr": "it takes a Python function, which a config cannot hold",
    "multiplicativelr": "it takes a Python function, which a config cannot hold",
    "sequentiallr": "it chains other schedule objects, which a config cannot hold",
    "chainedscheduler": "it chains other schedule objects, which a config cannot hold",
    "greedy": "transformers' greedy schedule needs its own state of the training loss, not provided",
}
# Arguments the trainer itself passes (never scheduler_kwargs)
_GIVEN = {"optimizer", "num_warmup_steps", "num_training_steps", "last_epoch", "verbose"}


def names() -> list[str]:
    return sorted({*TRANSFORMERS_SCHEDULES, *TORCH_SCHEDULES})


def problems(config: Mapping[str, Any]) -> list[str]:
    """An unknown or refused schedule, warm-up a torch schedule would not apply, settings the schedule lacks."""
    where = config.where if hasattr(config, "where") else (lambda key: key)
    name = str(config["scheduler"]).lower()
    if name in REFUSED:
        return [f"{where('scheduler')}={config['scheduler']!r} is not provided: {REFUSED[name]}"]
    if name not in TRANSFORMERS_SCHEDULES and name not in TORCH_SCHEDULES:
        return [f"{where('scheduler')}: unknown schedule {config['scheduler']!r}{suggest(name, names())}; available: "
                f"{', '.join(names())}"]
    found = []
    if name in TORCH_SCHEDULES and (config["warmup_steps"] or config["warmup_ratio"]):
        found.append(f"{where('scheduler')}={config['scheduler']!r} is torch's and has no warm-up: set warmup_steps "
                     f"and warmup_ratio to 0, or choose a transformers schedule (linear, cosine, ...)")
    settings = dict(config["scheduler_kwargs"])
    if name in TORCH_SCHEDULES:  # required arguments the run does not fill: StepLR's step_size, CyclicLR's base_lr
        filled = {*settings, *([RUN_LENGTH[name]] if name in RUN_LENGTH else []),
                  *(["max_lr"] if name in PEAK_RATE else [])}
        missing = [arg for arg in _required(name) if arg not in filled]
        if missing:
            found.append(f"{where('scheduler_kwargs')}: the {name} schedule needs {', '.join(missing)} "
                         f"(e.g. --scheduler_kwargs=\"{{'{missing[0]}': ...}}\")")
    if name in ("cosine_with_min_lr", "cosine_warmup_with_min_lr") and not {"min_lr", "min_lr_rate"} & set(settings):
        found.append(f"{where('scheduler_kwargs')}: the {name} schedule needs min_lr or min_lr_rate (e.g. "
                     f"--scheduler_kwargs=\"{{'min_lr_rate': 0.1}}\")")
    if settings:
        accepted = _settings_of(name)
        unknown = sorted(set(settings) - accepted)
        if unknown:
            found.append(f"{where('scheduler_kwargs')}: {unknown[0]!r} is not a setting of the {name} schedule"
                         f"{suggest(unknown[0], accepted)}; its settings: {', '.join(sorted(accepted)) or 'none'} "
                         f"(warm-up is warmup_steps / warmup_ratio, the length the run's steps)")
    return found


def _required(name: str) -> list[str]:
    import torch

    parameters = inspect.signature(getattr(torch.optim.lr_scheduler, TORCH_SCHEDULES[name])).parameters.values()
    return [p.name for p in parameters if p.default is p.empty and p.name not in _GIVEN | {"self"}
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _settings_of(name: str) -> set[str]:
    if name in TRANSFORMERS_SCHEDULES:
        from transformers.optimization import TYPE_TO_SCHEDULER_FUNCTION, SchedulerType

        function = TYPE_TO_SCHEDULER_FUNCTION[SchedulerType(TRANSFORMERS_SCHEDULES[name])]
    else:
        import torch

        function = getattr(torch.optim.lr_scheduler, TORCH_SCHEDULES[name])
    # transformers leaves TYPE_TO_SCHEDULER_FUNCTION unannotated: mypy joins its functions to builtins.function
    return set(inspect.signature(function).parameters) - _GIVEN - {"self"}  # type: ignore[arg-type]


def build(name: str, optimizer: torch.optim.Optimizer, warmup: int, total_steps: int, settings: Mapping[str, object],
          learning_rate: float) -> torch.optim.lr_scheduler.LRScheduler:
    """The schedule ``name`` over ``total_steps`` optimiser steps."""
    name = name.lower()
    if name in TRANSFORMERS_SCHEDULES:
        from transformers import get_scheduler

        return get_scheduler(TRANSFORMERS_SCHEDULES[name], optimizer, num_warmup_steps=warmup,
                             num_training_steps=total_steps, scheduler_specific_kwargs=dict(settings) or None)
    import torch

    settings = dict(settings)
    if name in RUN_LENGTH:
        settings.setdefault(RUN_LENGTH[name], total_steps)
    if name in PEAK_RATE:
        settings.setdefault("max_lr", learning_rate)
    return getattr(torch.optim.lr_scheduler, TORCH_SCHEDULES[name])(optimizer, **settings)
