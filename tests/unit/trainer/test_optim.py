"""Optimisers by name with optimizer_kwargs, weight decay only where it belongs, and every schedule's learning
rates against their formulas."""
from __future__ import annotations

import math

import pytest
import torch

from textbox.config import TextBoxUserError
from textbox.trainer.optim import build_optimizer, build_scheduler, parameter_groups
from tests.unit.trainer.tiny import trainer_config


class TinyNet(torch.nn.Module):
    """Weights that should decay, and a bias and a LayerNorm that should not."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Linear(4, 4)
        self.layer_norm = torch.nn.LayerNorm(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer_norm(self.proj(x))


def one_step(optimizer: torch.optim.Optimizer, model: torch.nn.Module) -> None:
    model(torch.ones(2, 4)).pow(2).sum().backward()
    optimizer.step()


@pytest.mark.parametrize("name, expected", [
    ("adamw", torch.optim.AdamW), ("adam", torch.optim.Adam), ("sgd", torch.optim.SGD),
    ("adafactor", torch.optim.Adafactor), ("adagrad", torch.optim.Adagrad), ("rmsprop", torch.optim.RMSprop),
    ("NAdam", torch.optim.NAdam), ("asgd", torch.optim.ASGD),
])
def test_every_named_optimiser_is_built_and_steps(name, expected):
    model = TinyNet()
    before = model.proj.weight.detach().clone()
    optimizer = build_optimizer(trainer_config(optimizer=name, learning_rate=0.01), model)
    assert type(optimizer) is expected
    assert optimizer.param_groups[0]["lr"] == 0.01
    one_step(optimizer, model)
    assert not torch.equal(model.proj.weight, before)


def test_optimizer_kwargs_reach_the_optimiser_and_change_its_updates():
    """SGD with momentum moves further on the second of two equal gradients than plain SGD."""
    moved = {}
    for kwargs in ({}, {"momentum": 0.9, "nesterov": True}):
        model = TinyNet()
        optimizer = build_optimizer(trainer_config(optimizer="sgd", optimizer_kwargs=kwargs, learning_rate=0.1), model)
        assert all(optimizer.param_groups[0][key] == value for key, value in kwargs.items())
        for _ in range(2):
            model.zero_grad()
            model.proj.weight.grad = torch.ones_like(model.proj.weight)
            before = model.proj.weight.detach().clone()
            optimizer.step()
        moved[bool(kwargs)] = (before - model.proj.weight).mean().item()
    assert moved[False] == pytest.approx(0.1)
    assert moved[True] == pytest.approx(0.1 * (1 + 0.9 + 0.9 ** 2))  # nesterov: g + momentum * (momentum * g + g)


def test_unknown_optimiser_and_wrong_kwargs_are_user_errors():
    with pytest.raises(TextBoxUserError, match="unknown optimizer 'adamm'; did you mean 'adam'"):
        build_optimizer(trainer_config(optimizer="adamm"), TinyNet())
    with pytest.raises(TextBoxUserError, match="--optimizer_kwargs=.*torch.optim.SGD"):
        build_optimizer(trainer_config(optimizer="sgd", optimizer_kwargs={"betas": (0.9, 0.99)}), TinyNet())


def test_weight_decay_shrinks_weights_but_not_biases_or_norms():
    """AdamW with a zero gradient only decays: weights shrink by lr * weight_decay, the rest stays put."""
    model = TinyNet()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = build_optimizer(trainer_config(optimizer="adamw", learning_rate=0.1, weight_decay=0.5), model)
    for parameter in model.parameters():
        parameter.grad = torch.zeros_like(parameter)
    optimizer.step()
    torch.testing.assert_close(model.proj.weight, before["proj.weight"] * (1 - 0.1 * 0.5))
    for name in ("proj.bias", "layer_norm.weight", "layer_norm.bias"):
        torch.testing.assert_close(dict(model.named_parameters())[name], before[name], rtol=0, atol=0)


def test_parameter_groups_of_a_transformer_keep_norms_and_biases_out_of_decay(tiny_model):
    model = tiny_model()
    decay, no_decay = parameter_groups(model, weight_decay=0.01)
    names = {id(p): name for name, p in model.named_parameters()}
    decayed = {names[id(p)] for p in decay["params"]}
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    assert "model.encoder.layers.0.fc1.weight" in decayed
    assert not any(name.endswith("bias") or "layernorm" in name.lower() for name in decayed)
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


def learning_rates(total_steps: int, **changes) -> list[float]:
    """The learning rate used at steps 0 .. total_steps - 1 (peak 1.0)."""
    model = TinyNet()
    config = trainer_config(optimizer="sgd", learning_rate=1.0, **changes)
    optimizer = build_optimizer(config, model)
    scheduler = build_scheduler(config, optimizer, total_steps)
    rates = []
    for _ in range(total_steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def expected_rate(schedule: str, step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return step / warmup
    progress = (step - warmup) / (total - warmup)
    return {"constant": 1.0, "linear": 1.0 - progress, "cosine": 0.5 * (1.0 + math.cos(math.pi * progress)),
            "inverse_sqrt": math.sqrt(warmup / step)}[schedule]


@pytest.mark.parametrize("schedule", ["constant", "linear", "cosine", "inverse_sqrt"])
@pytest.mark.parametrize("warmup", [{"warmup_steps": 4}, {"warmup_ratio": 0.2}])
def test_schedules_with_warmup_follow_their_formulas(schedule, warmup):
    """20 steps, 4 of warm-up given as steps or as a ratio: the same learning rates either way."""
    rates = learning_rates(20, scheduler=schedule, **warmup)
    assert rates == pytest.approx([expected_rate(schedule, step, 4, 20) for step in range(20)], abs=1e-9)
    assert rates[2] == pytest.approx(0.5)  # halfway up the warm-up


@pytest.mark.parametrize("name", ["adamw", "adam", "sgd", "adagrad"])
def test_cpu_optimisers_with_a_fused_kernel_use_it_and_update_as_the_loop_does(name):
    """By default the fused kernel runs (one call for all parameters); its updates equal the one-parameter-at-a-time
    loop's within float rounding, over steps that build momentum."""
    models = {kind: TinyNet() for kind in ("default", "loop")}
    kwargs = {"default": {}, "loop": {"foreach": False}}
    optimizers = {kind: build_optimizer(trainer_config(optimizer=name, learning_rate=0.01, weight_decay=0.1,
                                                       optimizer_kwargs=kwargs[kind]), model)
                  for kind, model in models.items()}
    assert optimizers["default"].defaults["fused"] is True
    assert not optimizers["loop"].defaults["fused"] and optimizers["loop"].defaults["foreach"] is False
    for _ in range(3):
        for kind, model in models.items():
            optimizers[kind].zero_grad()
            one_step(optimizers[kind], model)
    for default, loop in zip(models["default"].parameters(), models["loop"].parameters()):
        torch.testing.assert_close(default, loop)
    assert not torch.equal(models["default"].proj.weight, TinyNet().proj.weight)


def test_an_implementation_in_optimizer_kwargs_is_honoured_and_optimisers_without_a_fused_kernel_are_left_alone():
    assert build_optimizer(trainer_config(optimizer="adamw", optimizer_kwargs={"fused": False}), TinyNet()) \
        .defaults["fused"] is False
    assert build_optimizer(trainer_config(optimizer="adamw", optimizer_kwargs={"foreach": True}), TinyNet()) \
        .defaults["foreach"] is True
    assert not build_optimizer(trainer_config(optimizer="rmsprop"), TinyNet()).defaults.get("fused")
