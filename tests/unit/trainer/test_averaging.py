"""--average_checkpoints: the averaged weights are the mean of the saved checkpoints', and the average becomes
checkpoint_best only when its validation beats every single checkpoint's."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from textbox.trainer.averaging import average_saved_models, latest_step_checkpoints
from tests.unit.trainer.tiny import ScriptedValidation, metric_rows


def saved_weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "model.safetensors"))


def mean_of(paths: list[Path]) -> dict[str, torch.Tensor]:
    loaded = [saved_weights(path) for path in paths]
    return {name: torch.stack([weights[name].double() for weights in loaded]).mean(0).float() for name in loaded[0]}


def test_averaged_weights_are_the_mean_of_the_saved_ones(tmp_path, tiny_model, tokenizer):
    paths = []
    for seed in range(3):
        model = tiny_model()
        torch.manual_seed(100 + seed)
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.randn_like(parameter))  # three clearly different sets of weights
        paths.append(tmp_path / f"checkpoint-{seed + 1}")
        model.save_pretrained(paths[-1])
    averaged = average_saved_models(paths, tiny_model())
    state = averaged.state_dict()
    expected = mean_of(paths)
    assert set(expected) <= set(state)
    for name, tensor in expected.items():
        torch.testing.assert_close(state[name], tensor, rtol=0, atol=1e-7, msg=name)
    # the tied embeddings stay one tensor: the output layer is the averaged input embedding
    assert averaged.lm_head.weight.data_ptr() == averaged.model.shared.weight.data_ptr()
    assert not torch.equal(state["model.shared.weight"], saved_weights(paths[-1])["model.shared.weight"])


def test_latest_step_checkpoints_orders_by_step_not_by_name(tmp_path):
    for name in ("checkpoint-9", "checkpoint-10", "checkpoint-100", "checkpoint_best", "checkpoint_last",
                 "checkpoint-8"):
        (tmp_path / name).mkdir()
    assert [p.name for p in latest_step_checkpoints(tmp_path, 2, up_to_step=50)] == ["checkpoint-9", "checkpoint-10"]
    assert [p.name for p in latest_step_checkpoints(tmp_path, 5, up_to_step=9)] == ["checkpoint-8", "checkpoint-9"]


@pytest.mark.parametrize("average_wins", [True, False])
def test_the_average_competes_for_checkpoint_best(make_trainer, train_data, average_wins):
    """Validations at steps 1..4 (bleu 10, 30, 20, 25), then the average of steps 2..4: 40 (wins) or 5 (loses)."""
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=4, max_save=-1, average_checkpoints=3)
    figures = [{"bleu": value} for value in (10.0, 30.0, 20.0, 25.0, 40.0 if average_wins else 5.0)]
    state = trainer.fit(train_data, ScriptedValidation(figures, names=["bleu"]))
    run_dir = trainer.run_dir
    assert state.averaged["steps"] == [2, 3, 4] and state.averaged["chosen"] is average_wins
    assert state.averaged["valid"] == figures[-1]
    best = saved_weights(run_dir / "checkpoint_best")
    if average_wins:
        assert (state.best_step, state.best_valid) == (4, figures[-1])
        expected = mean_of([run_dir / f"checkpoint-{step}" for step in (2, 3, 4)])
    else:
        assert (state.best_step, state.best_valid) == (2, {"bleu": 30.0})
        expected = saved_weights(run_dir / "checkpoint-2")
    for name, tensor in expected.items():
        torch.testing.assert_close(best[name], tensor, rtol=0, atol=1e-7, msg=name)
    rows = metric_rows(run_dir, "valid_average")
    assert rows == [{"split": "valid_average", "step": 4, "checkpoints": 3, **figures[-1]}]
    saved = json.loads((run_dir / "checkpoint_last" / "train_state.json").read_text())
    assert saved["averaged"] == state.averaged


def test_nothing_is_averaged_from_a_single_checkpoint(make_trainer, train_data, caplog):
    trainer = make_trainer(valid_strategy="step", valid_steps=5, max_steps=5, max_save=-1, average_checkpoints=3)
    state = trainer.fit(train_data, ScriptedValidation([{"bleu": 1.0}], names=["bleu"]))
    assert state.averaged == {"at_step": 5, "steps": [5], "chosen": False}
    assert "nothing averaged" in caplog.text


def test_a_failing_average_costs_that_average_not_the_run(make_trainer, train_data, caplog, monkeypatch):
    """Averaging the checkpoints fails (a model whose state cannot be loaded back, an out-of-memory while
    validating the average): one error line, the error in the record (results.json's averaged), and the run goes
    on with the single checkpoints: checkpoint_best and checkpoint_last as without averaging."""
    def cannot_average(paths, like):
        raise RuntimeError("Error(s) in loading state_dict:\n\tUnexpected key(s) in state_dict: 'w.absmax'")

    monkeypatch.setattr("textbox.trainer.averaging.average_saved_models", cannot_average)
    trainer = make_trainer(valid_strategy="step", valid_steps=1, max_steps=3, max_save=-1, average_checkpoints=3)
    state = trainer.fit(train_data, ScriptedValidation([{"bleu": value} for value in (10.0, 30.0, 20.0)],
                                                       names=["bleu"]))
    assert state.averaged == {"at_step": 3, "steps": [1, 2, 3], "chosen": False,
                              "error": "RuntimeError: Error(s) in loading state_dict: Unexpected key(s) in "
                                       "state_dict: 'w.absmax'"}
    assert (state.best_step, state.best_valid) == (2, {"bleu": 30.0})
    assert (trainer.run_dir / "checkpoint_best").is_dir() and (trainer.run_dir / "checkpoint_last").is_dir()
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert errors == ["average_checkpoints=3: averaging the checkpoints of steps [1, 2, 3] failed (RuntimeError: "
                      "Error(s) in loading state_dict: Unexpected key(s) in state_dict: 'w.absmax'); the run goes on "
                      "with the single checkpoints (results.json's averaged.error)"]


def test_adapter_checkpoints_average_their_adapters_and_leave_the_base_alone(tmp_path, tiny_model):
    """An efficient method's checkpoints hold what it trained: that is what is averaged (the base is the same in
    each, and a quantised base's state cannot be loaded back as a state dict)."""
    from peft import LoraConfig, get_peft_model
    from transformers import BartForConditionalGeneration

    tiny_model().save_pretrained(tmp_path / "base")
    paths, adapters = [], []
    for seed in range(3):
        base = BartForConditionalGeneration.from_pretrained(tmp_path / "base")
        model = get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj", "v_proj"]))
        torch.manual_seed(200 + seed)
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                if parameter.requires_grad:
                    parameter.add_(torch.randn_like(parameter))
        adapters.append({name: parameter.detach().clone() for name, parameter in model.named_parameters()
                         if parameter.requires_grad})
        paths.append(tmp_path / f"checkpoint-{seed + 1}")
        model.save_pretrained(paths[-1])
    averaged = average_saved_models(paths, model)
    trained = {name: parameter for name, parameter in averaged.named_parameters() if parameter.requires_grad}
    assert set(trained) == set(adapters[0]) and trained
    for name, parameter in trained.items():
        expected = torch.stack([weights[name].double() for weights in adapters]).mean(0).float()
        torch.testing.assert_close(parameter.detach(), expected, rtol=0, atol=1e-7, msg=name)
    base_weights = BartForConditionalGeneration.from_pretrained(tmp_path / "base").state_dict()
    for name, tensor in averaged.get_base_model().state_dict().items():
        if "lora_" not in name and name.replace(".base_layer", "") in base_weights:
            assert torch.equal(tensor, base_weights[name.replace(".base_layer", "")]), name
