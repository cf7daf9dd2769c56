from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, BartForConditionalGeneration

from textbox.config import TextBoxUserError
from textbox.model import transformer

SOURCES = ["friend paints small boat", "teacher watches garden gate"]


def test_builds_a_bart_sized_by_config_kwargs_with_the_tokenizer_vocabulary(tiny_transformer):
    model, tokenizer = tiny_transformer
    assert isinstance(model, BartForConditionalGeneration)
    assert (model.config.d_model, model.config.encoder_layers, model.config.decoder_ffn_dim) == (32, 2, 64)
    assert model.config.vocab_size == len(tokenizer) == model.get_input_embeddings().num_embeddings


def test_special_ids_agree_between_tokenizer_config_and_generation_config(tiny_transformer):
    model, tokenizer = tiny_transformer
    expected = {"pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
                "eos_token_id": tokenizer.eos_token_id, "decoder_start_token_id": tokenizer.eos_token_id}
    assert expected == {"pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2}
    for settings in (model.config, model.generation_config):
        assert {name: getattr(settings, name) for name in expected} == expected
    assert model.generation_config.max_new_tokens == 8  # tgt_len


def test_positions_cover_sources_and_the_longest_generation(tiny_config, train_split):
    model = transformer.build(tiny_config(src_len=40, tgt_len=16), train_split).model
    assert model.config.max_position_embeddings == 40
    model = transformer.build(tiny_config(src_len=40, generation_kwargs={"max_new_tokens": 50}), train_split).model
    assert model.config.max_position_embeddings == 51


def test_one_training_step_learns(tiny_transformer):
    model, tokenizer = tiny_transformer
    trained = BartForConditionalGeneration(model.config)
    trained.load_state_dict(model.state_dict())
    trained.train()
    batch = tokenizer(SOURCES, return_tensors="pt", padding=True)
    labels = tokenizer(["my friend paints the small boat.", "the teacher watches the garden gate."],
                       return_tensors="pt", padding=True).input_ids
    labels[labels == tokenizer.pad_token_id] = -100
    optimizer = torch.optim.AdamW(trained.parameters(), lr=1e-2)
    losses = []
    for _ in range(3):
        loss = trained(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_checkpoint_reloads_and_generates_the_same_tokens(tiny_transformer, saved_bart, tiny_config, greedy):
    model, tokenizer = tiny_transformer
    expected = greedy(model, tokenizer)
    assert expected.shape[1] > 3
    built = transformer.build(tiny_config(model_path=str(saved_bart)), None)
    for reloaded, reloaded_tokenizer in [
        (built.model, built.tokenizer),
        (AutoModelForSeq2SeqLM.from_pretrained(saved_bart), AutoTokenizer.from_pretrained(saved_bart)),
    ]:
        assert reloaded.generation_config.max_new_tokens == model.generation_config.max_new_tokens
        assert torch.equal(greedy(reloaded, reloaded_tokenizer), expected)


def test_untrained_model_without_checkpoint_is_a_user_error(tiny_config):
    with pytest.raises(TextBoxUserError, match=r"--do_train=True.*--model_path="):
        transformer.build(tiny_config(), None)


def test_misspelled_config_kwargs_are_rejected(tiny_config, train_split):
    with pytest.raises(TextBoxUserError, match="--config_kwargs: d_modle is not a setting of a 'bart'"):
        transformer.build(tiny_config(config_kwargs={"d_modle": 64}), train_split)


def test_a_config_kwargs_value_the_bart_config_refuses_is_a_user_error_naming_it(tiny_config, train_split):
    """The builder's own guard, for a config the checks could not read (textbox.model.kwargs_types checks first)."""
    with pytest.raises(TextBoxUserError, match="--config_kwargs: Validation error for field 'd_model'"):
        transformer.build(tiny_config(config_kwargs={"d_model": "abc"}), train_split)


def test_unknown_tokenizer_kwargs_are_rejected(tiny_config, train_split):
    with pytest.raises(TextBoxUserError, match="--tokenizer_kwargs: vocab not understood.*vocab_size and min_freq"):
        transformer.build(tiny_config(tokenizer_kwargs={"vocab": 300}), train_split)


def test_missing_checkpoint_directory_names_model_path(tiny_config, tmp_path):
    with pytest.raises(TextBoxUserError, match="--model_path="):
        transformer.build(tiny_config(model_path=str(tmp_path / "no_such_run" / "checkpoint_best")), None)


def test_a_decoder_only_checkpoint_names_the_model_that_loads_it(tiny_config, tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50, bos_token_id=0,
                               eos_token_id=0)).save_pretrained(tmp_path / "gpt")
    with pytest.raises(TextBoxUserError, match="--model=causal_lm"):
        transformer.build(tiny_config(model_path=str(tmp_path / "gpt")), None)
