"""Each training knob takes effect, shown on an in-process Trainer with a tiny model (seconds per test)."""
from __future__ import annotations

import json
import logging

import pytest
import torch
import torch.nn.functional as F

from textbox.config import TextBoxError, TextBoxUserError
from textbox.data.collate import Seq2SeqCollator
from textbox.trainer import loop, sharding
from tests.unit.trainer.tiny import ScriptedValidation, metric_rows


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: parameter.detach().clone() for name, parameter in model.named_parameters()}


def test_accumulation_counts_one_optimiser_step_per_window(make_trainer, train_data):
    """6 batches of 4 with accumulation_steps=4: windows of 4 and 2 batches, so 2 steps per epoch."""
    trainer = make_trainer(accumulation_steps=4, epochs=2)
    state = trainer.fit(train_data, None)
    assert state.step == 4 and state.epoch == 2
    assert [row["step"] for row in metric_rows(trainer.run_dir, "train")] == [1, 2, 3, 4]


def test_accumulated_gradient_equals_one_large_batch(make_trainer, encode, tiny_model):
    """4 batches of 2 accumulated give the update of one batch of 8 (plain SGD, lr 1: the update is the
    gradient), although the batches hold different numbers of target tokens."""
    from tests.unit.trainer.tiny import reverse_words_split

    data = encode(reverse_words_split(8, seed=3))
    assert len({len(example["labels"]) for example in data}) > 1  # unequal lengths: a naive mean would differ
    updated = []
    for batch_size, accumulation in ((8, 1), (2, 4)):
        model = tiny_model()
        trainer = make_trainer(model=model, train_batch_size=batch_size, accumulation_steps=accumulation,
                               optimizer="sgd", learning_rate=1.0)
        assert trainer.fit(data, None).step == 1
        updated.append((weights(model), metric_rows(trainer.run_dir, "train")[0]["loss"]))
        (trainer.run_dir / "metrics.jsonl").unlink()
    (large, large_loss), (accumulated, accumulated_loss) = updated
    assert accumulated_loss == pytest.approx(large_loss, rel=1e-6)
    initial = weights(tiny_model())
    for name, value in large.items():
        assert not torch.equal(value, initial[name]), name  # every weight moved: the comparison means something
        torch.testing.assert_close(accumulated[name], value, rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.parametrize("max_steps, epochs, steps, epochs_done", [(None, 2, 12, 2), (8, 1, 8, 1), (3, 10, 3, 0)])
def test_max_steps_wins_over_epochs(make_trainer, train_data, max_steps, epochs, steps, epochs_done):
    """6 steps per epoch: epochs counts whole passes, max_steps (when set) the steps, beyond an epoch or not."""
    state = make_trainer(max_steps=max_steps, epochs=epochs).fit(train_data, None)
    assert (state.step, state.epoch) == (steps, epochs_done)


@pytest.mark.parametrize("strategy, batch_size, expected_steps", [("step", 4, [2, 4, 6, 7]), ("epoch", 12, [4, 7])])
def test_validation_follows_valid_strategy_and_valid_steps(make_trainer, train_data, validation, strategy,
                                                           batch_size, expected_steps):
    """valid_steps=2: every 2 steps, or every 2 epochs (of 2 steps with batches of 12); and the final model.
    The run's on_validation hears of each one, with its step and the figures metrics.jsonl records."""
    trainer = make_trainer(valid_strategy=strategy, valid_steps=2, train_batch_size=batch_size, max_steps=7,
                           logging_steps=10)
    heard: list[tuple[int, dict[str, float]]] = []
    state = trainer.fit(train_data, validation(trainer, on_validation=lambda step, figures: heard.append(
        (step, figures))))
    rows = metric_rows(trainer.run_dir, "valid")
    assert [row["step"] for row in rows] == expected_steps
    assert state.validations == len(expected_steps)
    assert heard == [(row["step"], {k: v for k, v in row.items() if k not in ("split", "step")}) for row in rows]
    assert all(set(figures) == {"loss"} and figures["loss"] > 0 for _, figures in heard)


def test_best_model_sums_several_metrics_and_early_stopping_counts_stale_validations(make_trainer, train_data):
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=10, stopping_steps=2,
                           metrics=["bleu", "rouge"], metrics_for_best_model=["bleu", "rouge-l"])
    scripted = ScriptedValidation([
        {"bleu": 10.0, "rouge-l": 10.0},  # 20: best so far
        {"bleu": 15.0, "rouge-l": 4.0},   # 19: bleu alone would call this better
        {"bleu": 5.0, "rouge-l": 20.0},   # 25: best
        {"bleu": 20.0, "rouge-l": 4.0},   # 24: stale 1
        {"bleu": 1.0, "rouge-l": 1.0},    # stale 2: stop
    ], names=["bleu", "rouge-l"])
    state = trainer.fit(train_data, scripted)
    assert (state.step, state.best_step, state.best_score) == (5, 3, 25.0)
    assert state.stale_validations == 2
    saved_step = json.loads((trainer.run_dir / "checkpoint_last" / "train_state.json").read_text())["step"]
    assert saved_step == 5
    # the hook hears of each new best right after checkpoint_best, and of every validation with its step
    assert [notice[:2] for notice in scripted.notices] == [
        ("best", None), ("validated", 1), ("validated", 2), ("best", None), ("validated", 3), ("validated", 4),
        ("validated", 5)]


@pytest.mark.parametrize("minimise", [False, True])
def test_loss_is_minimised_when_it_chooses_the_best_model(make_trainer, train_data, minimise):
    """The pipeline's selection value is -loss (higher is better); a hook may as well give the loss itself with
    higher_is_better=False: the same choice, and the same best_score in train_state.json."""
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=3)
    state = trainer.fit(train_data, ScriptedValidation([{"loss": 3.0}, {"loss": 2.0}, {"loss": 2.5}],
                                                       minimise=minimise))
    assert (state.best_step, state.best_score) == (2, -2.0)


def test_max_save_keeps_the_newest_step_checkpoints(make_trainer, train_data, validation):
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=4, max_save=4)  # best, last and 2 more
    trainer.fit(train_data, validation(trainer))
    assert sorted(path.name for path in trainer.run_dir.glob("checkpoint-*")) == ["checkpoint-3", "checkpoint-4"]


def test_max_save_counts_as_textbox_did(make_trainer, train_data, validation):
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=3, max_save=2)  # TextBox's default
    trainer.fit(train_data, validation(trainer))
    assert list(trainer.run_dir.glob("checkpoint-*")) == []
    assert (trainer.run_dir / "checkpoint_best").is_dir() and (trainer.run_dir / "checkpoint_last").is_dir()
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=3, max_save=-1)  # every one
    trainer.fit(train_data, validation(trainer))
    assert sorted(path.name for path in trainer.run_dir.glob("checkpoint-*")) == \
        ["checkpoint-1", "checkpoint-2", "checkpoint-3"]


def test_metrics_jsonl_has_a_line_per_log_step(make_trainer, train_data):
    trainer = make_trainer(logging_steps=2, max_steps=5)
    trainer.fit(train_data, None)
    rows = metric_rows(trainer.run_dir, "train")
    assert [row["step"] for row in rows] == [2, 4, 5]  # and the last step, whatever the interval
    assert {"loss", "lr", "examples_per_s", "tokens_per_s"} <= set(rows[0])


def test_label_smoothing_changes_the_loss_as_cross_entropy_does(make_trainer, train_data, tiny_model, tokenizer):
    """The logged loss of one step over all 24 examples is F.cross_entropy's token mean with that smoothing.
    Large initial weights make the predictions peaked, so that smoothing changes the loss measurably."""
    batch = Seq2SeqCollator(tokenizer.pad_token_id)(train_data)
    model = tiny_model(init_std=0.5)
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                   decoder_input_ids=model.prepare_decoder_input_ids_from_labels(labels=batch["labels"])).logits
    expected = {smoothing: F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=-100,
                                           label_smoothing=smoothing).item() for smoothing in (0.0, 0.2)}
    assert expected[0.2] != pytest.approx(expected[0.0], rel=0.005)
    for smoothing, reference in expected.items():
        trainer = make_trainer(model=tiny_model(init_std=0.5), label_smoothing=smoothing, train_batch_size=24,
                               max_steps=1)
        trainer.fit(train_data, None)
        assert metric_rows(trainer.run_dir, "train")[0]["loss"] == pytest.approx(reference, rel=1e-5)
        (trainer.run_dir / "metrics.jsonl").unlink()


def gradient_norms_at_each_step(monkeypatch) -> list[float]:
    """Record the total gradient norm the optimiser sees at every step (after clipping)."""
    norms: list[float] = []
    build = sharding.build_optimizer  # the Trainer's optimiser is built in trainer.sharding.prepare_training

    def build_and_watch(config, model):
        optimizer = build(config, model)
        optimizer.register_step_pre_hook(lambda opt, args, kwargs: norms.append(float(torch.norm(torch.stack(
            [p.grad.norm() for group in opt.param_groups for p in group["params"] if p.grad is not None])))))
        return optimizer

    monkeypatch.setattr(sharding, "build_optimizer", build_and_watch)
    return norms


@pytest.mark.parametrize("grad_clip", [None, 0.05])
def test_grad_clip_bounds_the_gradient_norm(make_trainer, train_data, monkeypatch, grad_clip):
    norms = gradient_norms_at_each_step(monkeypatch)
    make_trainer(grad_clip=grad_clip, max_steps=4).fit(train_data, None)
    assert len(norms) == 4
    if grad_clip is None:
        assert min(norms) > 0.05  # so the bound below is the clipping's doing
    else:
        assert max(norms) <= grad_clip * (1 + 1e-4)


@pytest.mark.parametrize("precision, dtype", [("bf16", torch.bfloat16), ("no", torch.float32)])
def test_mixed_precision_bf16_autocasts_the_training_forward_on_cpu(make_trainer, train_data, tiny_model,
                                                                    precision, dtype):
    model = tiny_model()
    seen: list[torch.dtype] = []
    model.model.encoder.layers[0].fc1.register_forward_hook(lambda module, args, output: seen.append(output.dtype))
    make_trainer(mixed_precision=precision, model=model, max_steps=1).fit(train_data, None)
    assert seen and set(seen) == {dtype}


def nan_loss_at_training_call(monkeypatch, call: int) -> None:
    """The call-th training forward (not validation) returns NaN losses."""
    forward = loop.forward_token_losses
    calls = {"training": 0}

    def forward_with_nan(model, unwrapped, batch, label_smoothing=0.0, loss=None):
        sums, counts = forward(model, unwrapped, batch, label_smoothing, loss)
        if unwrapped.training:
            calls["training"] += 1
            if calls["training"] == call:
                return sums * float("nan"), counts
        return sums, counts

    monkeypatch.setattr(loop, "forward_token_losses", forward_with_nan)


def test_nan_loss_stops_naming_the_step_and_keeps_the_last_good_checkpoint(make_trainer, train_data, validation,
                                                                           monkeypatch):
    from transformers import AutoModelForSeq2SeqLM

    trainer = make_trainer(valid_strategy="step", valid_steps=2, max_steps=6)
    nan_loss_at_training_call(monkeypatch, call=3)
    with pytest.raises(TextBoxError, match="NaN/inf at optimiser step 3 .*checkpoint_last \\(step 2;"):
        trainer.fit(train_data, validation(trainer))
    saved = trainer.run_dir / "checkpoint_last"
    assert json.loads((saved / "train_state.json").read_text())["step"] == 2
    best = AutoModelForSeq2SeqLM.from_pretrained(trainer.run_dir / "checkpoint_best")
    assert all(torch.isfinite(parameter).all() for parameter in best.parameters())


def test_skip_nan_batches_skips_and_trains_on(make_trainer, train_data, monkeypatch, caplog):
    trainer = make_trainer(skip_nan_batches=True, max_steps=4)
    nan_loss_at_training_call(monkeypatch, call=2)
    with caplog.at_level(logging.WARNING, logger="textbox.tests"):
        state = trainer.fit(train_data, None)
    assert state.step == 4
    assert "optimiser step 2: skipped 1 batch(es) with a NaN/inf loss" in caplog.text
    assert [row["step"] for row in metric_rows(trainer.run_dir, "train")] == [1, 2, 3, 4]
    assert all(torch.isfinite(parameter).all() for parameter in trainer.model.parameters())


def test_a_ddp_unused_parameter_failure_is_reported_with_its_fix(make_trainer, train_data, monkeypatch):
    def failing_forward(*args, **kwargs):
        raise RuntimeError("Expected to have finished reduction in the prior iteration before starting a new one.")

    monkeypatch.setattr(loop, "forward_token_losses", failing_forward)
    with pytest.raises(TextBoxUserError, match="--find_unused_parameters=True"):
        make_trainer(max_steps=1).fit(train_data, None)


def test_a_metric_failing_on_the_valid_split_stops_only_when_it_chooses_the_best_model(make_trainer, validation,
                                                                                     tmp_path, caplog):
    """A metric that fails while scoring a validation: an error line, and validation goes on with the other figures,
    unless its figure is one of metrics_for_best_model (then no model can be chosen: one message naming both)."""
    unloadable = tmp_path / "unloadable"
    unloadable.mkdir()
    (unloadable / "config.json").write_text("{}")  # passes the checks, fails to load when scored
    keys = {"metrics": ["bleu", "bert_score"], "bert_score_model_path": str(unloadable), "tgt_len": 4}
    trainer = make_trainer(metrics_for_best_model=["bleu"], **keys)
    figures = validation(trainer).validate(trainer.model).figures
    assert "bleu" in figures and not any(name.startswith("bert_score") for name in figures)
    assert any(record.levelname == "ERROR" and record.getMessage().startswith(
        f"metric bert_score failed on the valid split: bert_score_model_path={unloadable}: cannot load")
        for record in caplog.records)
    trainer = make_trainer(metrics_for_best_model=["bert_score-f1"], **keys)
    with pytest.raises(TextBoxError, match=r"metrics_for_best_model \(default\): bert_score-f1 could not be "
                                           r"computed on the valid split \(bert_score: bert_score_model_path="):
        validation(trainer).validate(trainer.model)


@pytest.mark.parametrize("max_save", [0, 1])
def test_max_save_0_and_1_keep_checkpoint_best_alone_during_training(make_trainer, train_data, validation, max_save):
    """TextBox 2.0's 1 = the best checkpoint only; its 0 keeps nothing once the run ends, but the test pass still
    reads checkpoint_best (the pipeline removes it after results.json): the trainer keeps the same for both."""
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=3, max_save=max_save)
    trainer.fit(train_data, validation(trainer))
    assert sorted(path.name for path in trainer.run_dir.iterdir() if path.name.startswith("checkpoint")) == \
        ["checkpoint_best"]
    assert (trainer.run_dir / "checkpoint_best" / "model.safetensors").is_file()


def test_max_save_1_on_a_resume_removes_the_checkpoint_last_it_continued(make_trainer, train_data, validation):
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=2)
    trainer.fit(train_data, validation(trainer))
    assert (trainer.run_dir / "checkpoint_last").is_dir()
    resumed = make_trainer(valid_strategy="step", valid_steps=1, max_steps=3, max_save=1, resume=True)
    assert resumed.fit(train_data, validation(resumed)).step == 3
    assert not (trainer.run_dir / "checkpoint_last").exists() and (trainer.run_dir / "checkpoint_best").is_dir()


def test_save_optimizer_false_leaves_the_optimiser_state_out_of_checkpoint_last(make_trainer, train_data):
    full = make_trainer(max_steps=2)
    full.fit(train_data, None)
    files = {path.name for path in (full.run_dir / "checkpoint_last").iterdir()}
    assert "optimizer.bin" in files  # the comparison below means something
    (full.run_dir / "checkpoint_last").rename(full.run_dir / "with_optimizer")
    lean = make_trainer(max_steps=2, save_optimizer=False)
    lean.fit(train_data, None)
    assert {path.name for path in (lean.run_dir / "checkpoint_last").iterdir()} == files - {"optimizer.bin"}
    assert lean.accelerator._optimizers  # the optimiser is registered again after the save


def test_a_registered_loss_trains_the_model(make_trainer, train_data, monkeypatch):
    """--loss names a textbox.register_loss function: twice the cross-entropy logs twice the first step's loss
    (taken before any update, from the same initial weights); an unknown name is a config problem."""
    from tests.helpers import problems
    from textbox.model import losses

    monkeypatch.setattr(losses, "_LOSSES", dict(losses._LOSSES))  # the registry is process-wide
    losses.register_loss("doubled", lambda logits, labels, smoothing: 2 * F.cross_entropy(logits, labels,
                                                                                            reduction="none"))
    first = []
    for loss in ("cross_entropy", "doubled"):
        trainer = make_trainer(max_steps=1, logging_steps=1, loss=loss)
        trainer.fit(train_data, None)
        first.append(metric_rows(trainer.run_dir, "train")[0]["loss"])
        (trainer.run_dir / "metrics.jsonl").unlink()
    assert first[1] == pytest.approx(2 * first[0], rel=1e-5)
    assert any("unknown loss 'dubled'; did you mean 'doubled'?" in problem for problem in problems("--loss=dubled"))
