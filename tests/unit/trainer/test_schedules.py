"""--scheduler: every transformers and torch schedule that steps on its own, --scheduler_kwargs checked against it
before anything runs, and TextBox 2.0's scheduler names and scheduler_kwargs translated."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from textbox.checks import load_checked_config
from textbox.config import ConfigError
from textbox.trainer import schedules
from textbox.trainer.optim import build_optimizer, build_scheduler


def _rates(config, total: int = 10) -> list[float]:
    model = torch.nn.Linear(2, 2)
    optimizer = build_optimizer(config, model)
    scheduler = build_scheduler(config, optimizer, total)
    rates = []
    for _ in range(total):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def _config(data_dir: Path, *argv: str):
    return load_checked_config([f"--data_path={data_dir}", "--optimizer=sgd", "--learning_rate=1.0",
                                "--warmup_steps=0", *argv])


@pytest.mark.parametrize("name", schedules.names())
def test_every_schedule_builds_and_steps(name: str, data_dir: Path):
    needs = {"steplr": "{'step_size': 3}", "multisteplr": "{'milestones': [3, 6]}", "exponentiallr": "{'gamma': 0.9}",
             "cycliclr": "{'base_lr': 0.1}", "cosineannealingwarmrestarts": "{'T_0': 4}",
             "warmup_stable_decay": "{'num_decay_steps': 4}", "cosine_with_min_lr": "{'min_lr_rate': 0.1}",
             "cosine_warmup_with_min_lr": "{'min_lr_rate': 0.1}"}
    argv = [f"--scheduler={name}", *([f"--scheduler_kwargs={needs[name]}"] if name in needs else [])]
    rates = _rates(_config(data_dir, *argv))
    assert all(math.isfinite(rate) and rate >= 0 for rate in rates)


def test_torch_schedules_follow_torch_and_take_the_runs_length(data_dir: Path):
    assert _rates(_config(data_dir, "--scheduler=steplr", "--scheduler_kwargs={'step_size': 3, 'gamma': 0.5}")) == \
        pytest.approx([1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125])
    cosine = _rates(_config(data_dir, "--scheduler=cosineannealinglr"))  # T_max = the run's 10 steps
    assert cosine == pytest.approx([0.5 * (1 + math.cos(math.pi * step / 10)) for step in range(10)])


def test_transformers_schedule_settings_are_passed(data_dir: Path):
    rates = _rates(_config(data_dir, "--scheduler=polynomial", "--scheduler_kwargs={'power': 2.0, 'lr_end': 0.0}"))
    assert rates == pytest.approx([(1 - step / 10) ** 2 for step in range(10)])


@pytest.mark.parametrize("argv, pointer", [
    (["--scheduler=cosine", "--scheduler_kwargs={'num_cycle': 2}"], "did you mean 'num_cycles'?"),
    (["--scheduler=steplr"], "needs step_size"),
    (["--scheduler=steplr", "--scheduler_kwargs={'step_size': 2}", "--warmup_steps=5"], "has no warm-up"),
    (["--scheduler=reduce_lr_on_plateau"], "steps on a validation figure"),
    (["--scheduler=lambdalr"], "Python function"),
    (["--scheduler=cosine_with_min_lr"], "needs min_lr or min_lr_rate"),
    (["--scheduler=cosin"], "did you mean 'cosine'?"),
    (["--scheduler=linear", "--scheduler_kwargs={'init_lr': 1e-6}"], "drop init_lr"),
])
def test_schedules_and_settings_without_meaning_are_refused_before_anything_runs(argv, pointer, data_dir: Path):
    with pytest.raises(ConfigError) as caught:
        load_checked_config([f"--data_path={data_dir}", *argv])
    assert any(pointer in problem for problem in caught.value.problems), caught.value.problems


def test_textbox_scheduler_and_its_kwargs_become_ours(data_dir: Path):
    config = load_checked_config([f"--data_path={data_dir}", "--scheduler=inverse",
                                  "--scheduler_kwargs={'n_warmup_steps': 7, 'max_lr': 2e-4, 'init_lr': 0}"])
    assert (config.scheduler, config.warmup_steps, config.learning_rate, config.scheduler_kwargs) == \
        ("inverse_sqrt", 7, 2e-4, {})
