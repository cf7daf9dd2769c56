"""NaN/inf in training and validation: a NaN validation never becomes the best, skipped batches leave no trace in
the gradient, the schedule waits for steps without update (fp16 scaler), a diverged perplexity is inf and the
JSON files stay strict JSON."""
from __future__ import annotations

import json
import logging
import math

import pytest
import torch
from accelerate import Accelerator

from textbox.trainer import loop
from tests.unit.trainer.tiny import ScriptedValidation, metric_rows, reverse_words_split

NAN = float("nan")


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: parameter.detach().clone() for name, parameter in model.named_parameters()}


def test_a_nan_first_validation_does_not_block_a_later_best(make_trainer, train_data):
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=3)
    state = trainer.fit(train_data, ScriptedValidation([{"loss": NAN}, {"loss": 3.0}, {"loss": 4.0}]))
    assert (state.best_step, state.best_score, state.best_valid) == (2, -3.0, {"loss": 3.0})
    assert state.stale_validations == 1
    assert [row["loss"] for row in metric_rows(trainer.run_dir, "valid")] == [None, 3.0, 4.0]  # strict JSON


def test_inf_validation_never_becomes_the_best(make_trainer, train_data):
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=3, metrics_for_best_model=["perplexity"])
    scripted = ScriptedValidation([{"loss": 5.0, "perplexity": 148.4}, {"loss": 800.0, "perplexity": math.inf},
                                   {"loss": 6.0, "perplexity": 403.4}], names=["perplexity"])
    assert trainer.fit(train_data, scripted).best_step == 1


def test_when_every_validation_is_nan_checkpoint_best_is_the_final_model(make_trainer, train_data, caplog):
    from transformers import AutoModelForSeq2SeqLM

    trainer = make_trainer(valid_strategy="step", valid_steps=2, max_steps=4)
    with caplog.at_level(logging.WARNING, logger="textbox.tests"):
        state = trainer.fit(train_data, ScriptedValidation([{"loss": NAN}, {"loss": NAN}]))
    assert "no validation gave a finite loss (all NaN/inf): checkpoint_best is the final model of step 4" \
           in caplog.text
    assert state.best_score is None and state.best_step == 4 and math.isnan(state.best_valid["loss"])
    best = AutoModelForSeq2SeqLM.from_pretrained(trainer.run_dir / "checkpoint_best")
    for name, value in weights(best).items():
        torch.testing.assert_close(value, dict(trainer.model.named_parameters())[name].detach(), msg=name)


def test_loss_only_validation_reports_an_overflowing_perplexity_as_inf(make_trainer, valid_set, monkeypatch):
    """Evaluator.validate's loss-only path uses the metric's formula: inf beyond exp's range, not exp(700)."""
    from textbox.evaluator.evaluator import Evaluator

    trainer = make_trainer(metrics_for_best_model=["perplexity"])
    evaluator = Evaluator(trainer.config, trainer.accelerator, trainer.tokenizer, trainer.collator)
    monkeypatch.setattr(evaluator, "loss", lambda model, loader: 800.0)
    report = evaluator.validate(trainer.model, valid_set)
    assert report.figures == {"loss": 800.0, "perplexity": math.inf}
    assert report.sequences is None and report.details is None


def test_results_json_writes_nan_and_inf_as_null():
    from textbox.trainer.records import finite_or_null

    results = {"test": {"loss": NAN, "perplexity": math.inf, "bleu": 1.5}, "steps": 3, "valid": [-math.inf, 2.0]}
    text = json.dumps(finite_or_null(results), allow_nan=False)
    assert json.loads(text) == {"test": {"loss": None, "perplexity": None, "bleu": 1.5}, "steps": 3,
                                "valid": [None, 2.0]}


def nan_loss_for(monkeypatch, poisoned: list[int] | None) -> None:
    """Training forwards return NaN losses for a batch whose first example has input_ids ``poisoned``
    (every training batch when None)."""
    forward = loop.forward_token_losses

    def forward_with_nan(model, unwrapped, batch, label_smoothing=0.0, loss=None):
        sums, counts = forward(model, unwrapped, batch, label_smoothing, loss)
        row = batch["input_ids"][0].tolist()
        if unwrapped.training and (poisoned is None or row[:len(poisoned)] == poisoned):
            return sums * NAN, counts
        return sums, counts

    monkeypatch.setattr(loop, "forward_token_losses", forward_with_nan)


def test_a_skipped_batch_leaves_the_update_of_the_other_batches_alone(make_trainer, encode, tiny_model,
                                                                      monkeypatch):
    """8 batches of 1 in one window, one of them NaN and skipped: the SGD update (lr 1: the gradient itself)
    equals that of one step over the 7 other examples alone. Counting the skipped batch's tokens in the mean
    would shrink it."""
    data = encode(reverse_words_split(8, seed=3))
    poisoned = data[5]["input_ids"]
    assert sum(example["input_ids"] == poisoned for example in data) == 1
    others = [example for example in data if example["input_ids"] != poisoned]
    nan_loss_for(monkeypatch, poisoned)
    updated = []
    for examples, batch_size, accumulation in ((data, 1, 8), (others, 7, 1)):
        model = tiny_model()
        trainer = make_trainer(model=model, train_batch_size=batch_size, accumulation_steps=accumulation,
                               optimizer="sgd", learning_rate=1.0, skip_nan_batches=True)
        assert trainer.fit(examples, None).step == 1
        updated.append((weights(model), metric_rows(trainer.run_dir, "train")[0]["loss"]))
        (trainer.run_dir / "metrics.jsonl").unlink()
    (skipped, skipped_loss), (alone, alone_loss) = updated
    assert skipped_loss == pytest.approx(alone_loss, rel=1e-6)
    initial = weights(tiny_model())
    for name, value in alone.items():
        assert not torch.equal(value, initial[name]), name  # every weight moved: the comparison means something
        torch.testing.assert_close(skipped[name], value, rtol=1e-5, atol=1e-7, msg=name)


def test_a_window_of_nan_batches_only_makes_no_update(make_trainer, train_data, tiny_model, monkeypatch):
    """AdamW with weight decay would still move the weights on a zero gradient: the step is skipped instead,
    and the schedule (linear warm-up over 10 steps) waits."""
    model = tiny_model()
    initial = weights(model)
    nan_loss_for(monkeypatch, None)
    trainer = make_trainer(model=model, skip_nan_batches=True, max_steps=2, weight_decay=0.1, warmup_steps=10)
    state = trainer.fit(train_data, None)
    for name, value in weights(model).items():
        assert torch.equal(value, initial[name]), name
    assert [row["lr"] for row in metric_rows(trainer.run_dir, "train")] == [0.0, 0.0]
    assert (state.step, state.skipped_steps) == (2, 2)


def test_the_schedule_waits_when_the_fp16_scaler_skips_the_step(make_trainer, train_data, monkeypatch):
    """fp16 needs CUDA: accelerate's signal (optimizer_step_was_skipped, set when the gradient scaler found
    inf/NaN gradients) is faked for the first two steps. Warm-up over 10 steps: the learning rate after n real
    updates is 1e-3 * n / 10, so the schedule must count the updates, not the steps."""
    skipped = iter([True, True])
    monkeypatch.setattr(Accelerator, "optimizer_step_was_skipped", property(lambda self: next(skipped, False)))
    trainer = make_trainer(max_steps=4, warmup_steps=10, learning_rate=1e-3)
    state = trainer.fit(train_data, None)
    assert [row["lr"] for row in metric_rows(trainer.run_dir, "train")] == pytest.approx([0.0, 0.0, 1e-4, 2e-4])
    assert (state.step, state.skipped_steps) == (4, 2)  # steps count windows; skipped_steps the ones without update
