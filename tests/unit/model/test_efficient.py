"""Parameter-efficient tuning (textbox.model.efficient): which parameters train, TextBox's defaults, settings
errors, training, generation, adapter-only saving and reloading onto the base model."""
from __future__ import annotations

import logging

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM

from textbox.config import TextBoxUserError
from textbox.config.checkpoint_family import ADAPTER_CONFIG, BITFIT_CONFIG
from textbox.model import hf_seq2seq
from textbox.model.adapter_files import save_model_files
from textbox.model.build import build_model
from textbox.model.efficient import apply_efficient_methods
from textbox.model.loading import load_saved_model
from textbox.model.built_model import BuiltModel, EfficientRecord
from textbox.model.loss import forward_token_losses

LOG = logging.getLogger("test_efficient")
SOURCES = ["friend paints small boat", "teacher watches garden gate", "dog finds two apples"]
TARGETS = ["my friend paints the small boat.", "the teacher watches the garden gate.", "a dog finds two apples."]
# method -> a test for the names of the parameters that train
TRAINABLE = {
    "lora": lambda name: "lora_" in name,
    "prefix-tuning": lambda name: "prompt_encoder" in name,
    "prompt-tuning": lambda name: "prompt_encoder" in name,
    "p-tuning": lambda name: "prompt_encoder" in name,
    "ia3": lambda name: "ia3_l" in name,
    "bitfit": lambda name: name.endswith("bias"),
}


@pytest.fixture
def build(tiny_config, saved_bart):
    """build(methods, **keys) -> (tuned model, tokenizer, its efficient record): the tiny saved BART with a method
    applied."""

    def make(methods, **changes):
        config = tiny_config(model="bart", model_path=str(saved_bart), config_kwargs={}, tokenizer_kwargs={},
                             efficient_methods=methods, **{"src_len": 12, **changes})
        tuned = apply_efficient_methods(config, hf_seq2seq.build(config, None), LOG)
        unfreeze = config.efficient_unfreeze_model
        assert tuned.efficient == EfficientRecord(methods[0], unfreeze, str(saved_bart.resolve()))
        return tuned.model, tuned.tokenizer, tuned.efficient

    return make


def _batch(tokenizer):
    batch = dict(tokenizer(SOURCES, return_tensors="pt", padding=True, truncation=True, max_length=12))
    labels = tokenizer(TARGETS, return_tensors="pt", padding=True, truncation=True, max_length=8).input_ids
    labels[labels == tokenizer.pad_token_id] = -100
    return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"], "labels": labels}


def _train(model, tokenizer, steps=12, lr=0.03) -> list[float]:
    model.eval()  # no dropout: the loss curve shows the trained parameters' effect alone
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    batch, losses = _batch(tokenizer), []
    for _ in range(steps):
        sums, counts = forward_token_losses(model, model, batch)
        loss = sums.sum() / counts.sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("method", list(TRAINABLE))
def test_only_the_methods_parameters_train(build, method):
    model, _, _ = build([method])
    named = dict(model.named_parameters())
    trainable = {name for name, p in named.items() if p.requires_grad}
    assert trainable and all(TRAINABLE[method](name) for name in trainable)
    if method == "bitfit":
        assert trainable == {name for name in named if name.endswith("bias")}
    assert sum(named[name].numel() for name in trainable) < 0.2 * sum(p.numel() for p in named.values())


def test_textbox_defaults_and_user_settings(build):
    lora = build(["lora"])[0].peft_config["default"]
    assert (lora.r, lora.lora_alpha, lora.lora_dropout) == (4, 32, 0.1)
    assert lora.task_type == "SEQ_2_SEQ_LM"
    for method in ("prefix-tuning", "prompt-tuning", "p-tuning"):
        assert build([method])[0].peft_config["default"].num_virtual_tokens == 10
    changed = build(["lora"], efficient_kwargs={"r": 8, "lora_dropout": 0.0})[0].peft_config["default"]
    assert (changed.r, changed.lora_alpha, changed.lora_dropout) == (8, 32, 0.0)
    assert build(["prompt-tuning"], efficient_kwargs={"num_virtual_tokens": 3})[0] \
        .peft_config["default"].num_virtual_tokens == 3


def test_unknown_or_reserved_settings_are_user_errors(build):
    with pytest.raises(TextBoxUserError, match="'lora_alph' is not a setting of lora.*did you mean 'lora_alpha'"):
        build(["lora"], efficient_kwargs={"lora_alph": 16})
    with pytest.raises(TextBoxUserError, match="'task_type' is not a setting of prefix-tuning"):
        build(["prefix-tuning"], efficient_kwargs={"task_type": "CAUSAL_LM"})
    with pytest.raises(TextBoxUserError, match="cannot be applied"):
        build(["lora"], efficient_kwargs={"target_modules": ["no_such_layer"]})


def test_unfreeze_trains_everything(build):
    model, _, _ = build(["lora"], efficient_unfreeze_model=True)
    assert all(p.requires_grad for p in model.parameters())


def test_bitfit_on_a_model_without_biases_is_a_clear_error(tiny_config):
    from transformers import T5Config, T5ForConditionalGeneration

    model = T5ForConditionalGeneration(T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=16, num_layers=1,
                                                num_heads=2, decoder_start_token_id=0))
    config = tiny_config(model="t5", model_path="/tmp", efficient_methods=["bitfit"])
    with pytest.raises(TextBoxUserError, match="trains only bias terms, and this 't5' model has none"):
        apply_efficient_methods(config, BuiltModel(model, None), LOG)


def test_a_from_scratch_base_cannot_be_saved_adapter_only(tiny_config, saved_bart):
    model = AutoModelForSeq2SeqLM.from_pretrained(saved_bart)
    with pytest.raises(TextBoxUserError, match="starts from random weights"):
        apply_efficient_methods(tiny_config(model="transformer", efficient_methods=["lora"]), BuiltModel(model, None),
                                LOG)


def _greedy(model, tokenizer):
    model.eval()
    batch = tokenizer(SOURCES, return_tensors="pt", padding=True, truncation=True, max_length=12)
    with torch.no_grad():
        return model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], num_beams=1,
                              do_sample=False, min_new_tokens=6, max_new_tokens=6)


@pytest.mark.parametrize("method", list(TRAINABLE))
def test_trains_generates_saves_the_trained_parameters_only_and_reloads(build, method, tmp_path, tiny_config):
    model, tokenizer, efficient = build([method])
    frozen_before = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    # virtual tokens of an untrained tiny model move its loss slowly: a larger step for them
    losses = _train(model, tokenizer, steps=15, lr=0.03 if method in ("lora", "bitfit") else 0.3)
    # dropout off, one fixed batch: every method lowers the loss; virtual tokens barely move an untrained model's
    assert losses[-1] < losses[0] - (0.0005 if "tuning" in method else 0.02), losses
    assert all(torch.equal(p, frozen_before[n]) for n, p in model.named_parameters() if n in frozen_before)
    expected = _greedy(model, tokenizer)

    saved = tmp_path / "checkpoint_best"
    save_model_files(model, saved, efficient)
    tokenizer.save_pretrained(saved)
    assert not (saved / "config.json").exists() and not (saved / "model.safetensors").exists()
    assert (saved / (BITFIT_CONFIG if method == "bitfit" else ADAPTER_CONFIG)).is_file()
    weights = sum(f.stat().st_size for f in saved.glob("*.safetensors"))
    full = sum(p.numel() * 4 for p in model.parameters())
    assert weights < 0.25 * full

    # in the same process (textbox.pipeline.recipe.evaluation_model) and as a new process's --model_path would load it
    assert torch.equal(_greedy(load_saved_model(saved, model), tokenizer), expected)
    built = hf_seq2seq.build(
        tiny_config(model="bart", model_path=str(saved), config_kwargs={}, tokenizer_kwargs={}), None)
    reloaded, reloaded_tokenizer = built.model, built.tokenizer
    assert torch.equal(_greedy(reloaded, reloaded_tokenizer), expected)
    trainable = {n for n, p in reloaded.named_parameters() if p.requires_grad}
    assert trainable and all(TRAINABLE[method](name) for name in trainable)  # tuning would go on as before


@pytest.mark.parametrize("method", ["lora", "ia3", "prompt-tuning", "bitfit"])
def test_unfrozen_models_are_saved_whole(build, method, tmp_path, tiny_config):
    model, tokenizer, efficient = build([method], efficient_unfreeze_model=True)
    _train(model, tokenizer, steps=3, lr=0.01)
    live = {n: p.detach().clone() for n, p in model.named_parameters()}
    expected = _greedy(model, tokenizer)
    saved = tmp_path / "checkpoint_best"
    save_model_files(model, saved, efficient)
    tokenizer.save_pretrained(saved)
    assert all(torch.equal(p, live[n]) for n, p in model.named_parameters())  # saving left the model as it was
    if method in ("lora", "ia3", "bitfit"):  # a plain model, merged
        assert (saved / "config.json").is_file() and not (saved / ADAPTER_CONFIG).exists()
        plain = AutoModelForSeq2SeqLM.from_pretrained(saved)
        assert torch.equal(_greedy(plain, tokenizer), expected)
    else:
        assert (saved / "base_model" / "config.json").is_file() and (saved / ADAPTER_CONFIG).is_file()
    built = hf_seq2seq.build(
        tiny_config(model="bart", model_path=str(saved), config_kwargs={}, tokenizer_kwargs={}), None)
    reloaded, reloaded_tokenizer = built.model, built.tokenizer
    assert torch.equal(_greedy(reloaded, reloaded_tokenizer), expected)
    assert torch.equal(_greedy(load_saved_model(saved, model), tokenizer), expected)


def test_an_efficient_checkpoint_cannot_take_a_second_method(build, tmp_path, tiny_config):
    model, tokenizer, efficient = build(["lora"])
    save_model_files(model, tmp_path / "adapter", efficient)
    tokenizer.save_pretrained(tmp_path / "adapter")
    config = tiny_config(model="bart", model_path=str(tmp_path / "adapter"), config_kwargs={}, tokenizer_kwargs={},
                         efficient_methods=["ia3"])
    with pytest.raises(TextBoxUserError, match="already holds a lora checkpoint"):
        build_model(config, None, LOG)  # the loaded adapter is recorded; a second method is refused
    reloaded = build_model(config.replace(efficient_methods=[]), None, LOG)
    assert reloaded.efficient == efficient  # what an adapter checkpoint records is what saved it


def test_validation_names_methods_and_combinations():
    from textbox.checks import load_checked_config
    from textbox.config.errors import ConfigError

    def problems(*argv):
        with pytest.raises(ConfigError) as error:
            load_checked_config([*argv, "--model=bart", "--model_path=facebook/bart-base"])
        return str(error.value)

    assert "unknown method 'lorra'; did you mean 'lora'?" in problems("--efficient_methods=['lorra']")
    assert "cannot be combined" in problems("--efficient_methods=['lora','prefix-tuning']")
    assert "efficient_unfreeze_model" in problems("--efficient_unfreeze_model=True")
    assert "bitfit takes no settings" in problems("--efficient_methods=['bitfit']", "--efficient_kwargs={'r': 4}")
    assert "decoder_model_path" in problems("--decoder_model_path=bert-base-uncased")
    with pytest.raises(ConfigError, match="tune a pretrained model"):
        load_checked_config(["--model=transformer", "--efficient_methods=['lora']"])
