"""Mixed precision on a CUDA GPU through the Trainer (run by benchmarks/gpu_check.sh; skipped without CUDA): fp16
with accelerate's gradient scaler and bf16 autocast train the tiny BART with finite losses close to float32's from
the same weights and batches, and the scaler's state is saved in checkpoint_last and restored by a resume.

Tolerances: the first logged loss is the forward of the same weights on the same batch in all three precisions, so
it differs only by the rounding of the autocast matrix products: bf16 keeps 8 bits of mantissa (relative rounding
2^-9 ~ 0.2% per product), fp16 11 bits (~0.05%), and the loss (log-softmax in float32 under autocast) sums errors of
that size over 2+2 layers: 2% and 0.5% leave room for that and none for a wrong loss (a loss of the unscaled or of
the scaled gradient's model, or of another batch, is off by far more). After a few updates the trajectories drift
apart by the same rounding compounded: the last loss within 5% of float32's."""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import train_losses
from tests.unit.trainer.tiny import trainer_config

pytestmark = pytest.mark.cuda

STEPS = 6


@pytest.fixture
def cuda_trainer(tokenizer, tiny_model, make_accelerator, tmp_path):
    """cuda_trainer(name, precision, scaler_kwargs=None, **config_changes): a Trainer on the GPU writing under
    tmp_path/<name>, from the tiny BART's seeded initial weights."""
    from accelerate.utils import GradScalerKwargs

    from textbox.data.collate import Seq2SeqCollator
    from textbox.trainer.context import RunContext, TrainerContext
    from textbox.trainer.loop import Trainer

    def make(name: str, precision: str, scaler: dict[str, Any] | None = None, **changes: Any) -> Trainer:
        run_dir = tmp_path / name
        run_dir.mkdir(exist_ok=True)
        handlers = [GradScalerKwargs(**scaler)] if scaler else None
        accelerator = make_accelerator(cpu=False, mixed_precision=precision, kwargs_handlers=handlers)
        config = trainer_config(**{"mixed_precision": precision, "max_steps": STEPS, **changes})
        run = RunContext(config, accelerator, run_dir, logging.getLogger("textbox.tests"))
        return Trainer(TrainerContext(run, tiny_model(), tokenizer, Seq2SeqCollator(tokenizer.pad_token_id)))

    return make


@pytest.fixture
def float32_losses(cuda_trainer, train_data) -> dict[int, float]:
    trainer = cuda_trainer("fp32", "no")
    trainer.fit(train_data, None)
    return train_losses(trainer.run_dir)


@pytest.mark.parametrize("precision, first_tolerance", [("bf16", 2e-2), ("fp16", 5e-3)])
def test_half_precision_trains_on_the_gpu_close_to_float32(cuda_trainer, train_data, float32_losses, precision,
                                                           first_tolerance):
    import torch

    trainer = cuda_trainer(precision, precision)
    seen: list[tuple[torch.device, torch.dtype]] = []
    trainer.model.model.encoder.layers[0].fc1.register_forward_hook(
        lambda module, args, output: seen.append((output.device, output.dtype)))
    state = trainer.fit(train_data, None)
    losses = train_losses(trainer.run_dir)
    wanted = torch.bfloat16 if precision == "bf16" else torch.float16
    assert {(device.type, dtype) for device, dtype in seen} == {("cuda", wanted)}  # autocast on the GPU
    assert state.step == STEPS and sorted(losses) == sorted(float32_losses)
    assert all(math.isfinite(loss) for loss in losses.values())
    assert losses[1] == pytest.approx(float32_losses[1], rel=first_tolerance)
    assert losses[STEPS] == pytest.approx(float32_losses[STEPS], rel=5e-2)
    assert (trainer.accelerator.scaler is not None) == (precision == "fp16")  # bf16 needs no loss scaling


def test_fp16_scaler_state_is_saved_in_checkpoint_last_and_restored_on_resume(cuda_trainer, train_data, caplog):
    """The first run starts its scaler at 2^10 (accelerate's default is 2^16): a resume that did not restore the
    saved scale would go on from 2^16 (halved at most a few times in 3 steps), never from the saved one."""
    import torch

    first = cuda_trainer("run", "fp16", scaler={"init_scale": 2.0 ** 10}, max_steps=3)
    first.fit(train_data, None)
    saved_file = Path(first.run_dir) / "checkpoint_last" / "scaler.pt"
    saved = torch.load(saved_file, weights_only=True)
    assert saved["scale"] == first.accelerator.scaler.get_scale() <= 2.0 ** 10
    assert saved["growth_interval"] == 2000  # the whole state, not the scale alone

    resumed = cuda_trainer("run", "fp16", resume=True)  # accelerate's default scaler, then checkpoint_last's state
    with caplog.at_level(logging.INFO, logger="textbox.tests"):
        state = resumed.fit(train_data, None)
    assert state.step == STEPS and "step 3, epoch 1" in caplog.text  # resumed from the first run's last step
    assert resumed.accelerator.scaler.get_scale() == saved["scale"]  # no overflow at 2^10 in 3 more steps
    assert torch.load(saved_file, weights_only=True)["scale"] == saved["scale"]  # the final state, saved again
    losses = train_losses(resumed.run_dir)
    assert sorted(losses) == list(range(1, STEPS + 1)) and all(math.isfinite(loss) for loss in losses.values())
