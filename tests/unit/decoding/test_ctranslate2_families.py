"""CTranslate2 on the other encoder-decoder families it converts (tiny random models: every output runs to the
length bound, so each token compares): the same outputs as transformers' generate. mBART and Pegasus failed to
convert (transformers 5 dropped config fields the converter reads); T5 sources past 1024 tokens were cut."""
from __future__ import annotations

import pytest
import torch

from tests.unit.decoding.conftest import SOURCES
from tests.unit.decoding.engines import decode


def _bart_like(family: str, tokenizer):
    import transformers

    sizes = dict(vocab_size=len(tokenizer), d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                 decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                 pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                 forced_eos_token_id=tokenizer.eos_token_id)
    if family == "mbart":  # no tokenizer_class: the converter leaves the start token to the target prefix
        return transformers.MBartForConditionalGeneration(transformers.MBartConfig(
            **sizes, decoder_start_token_id=tokenizer.eos_token_id))
    return transformers.PegasusForConditionalGeneration(transformers.PegasusConfig(
        **sizes, decoder_start_token_id=tokenizer.pad_token_id))


@pytest.mark.parametrize("settings", [{"max_new_tokens": 8}, {"max_new_tokens": 8, "num_beams": 3,
                                                                "early_stopping": True}])
@pytest.mark.parametrize("family", ["mbart", "pegasus"])
def test_mbart_and_pegasus_decode_as_transformers_does(family, settings, tokenizer, tmp_path):
    torch.manual_seed(2)  # a seed whose random models do not end at once
    model = _bart_like(family, tokenizer).eval()
    expected = decode(model, tokenizer, SOURCES, settings, "transformers", tmp_path)
    assert decode(model, tokenizer, SOURCES, settings, "ctranslate2", tmp_path) == expected
    assert any(expected)


def test_a_source_longer_than_1024_tokens_is_read_whole(tokenizer, tmp_path):
    """T5 (relative positions) reads sources of any length; CTranslate2 cut them after 1024 tokens by default."""
    import random

    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_kv=16, d_ff=64, num_layers=1, num_heads=2,
                      pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                      decoder_start_token_id=tokenizer.pad_token_id, initializer_factor=5.0)
    model = T5ForConditionalGeneration(config).eval()
    rng = random.Random(0)
    words = SOURCES[0].split()
    long = " ".join(["red"] * 1030 + [rng.choice(words) for _ in range(300)])
    assert len(tokenizer(long)["input_ids"]) > 2000  # what lies past 1024 tokens differs from what lies before
    settings = {"max_new_tokens": 8, "min_new_tokens": 8}
    expected = decode(model, tokenizer, [long], settings, "transformers", tmp_path)
    assert decode(model, tokenizer, [long], settings, "ctranslate2", tmp_path) == expected


@pytest.mark.parametrize("kind", ["t5", "t5-v1_1", "mt5"])
def test_t5_decoder_outputs_are_scaled_where_transformers_scales_them(kind, tokenizer, tmp_path):
    """transformers 5 scales a T5 decoder's outputs by d_model**-0.5 unless the checkpoint said tie_word_embeddings
    false (T5 v1.1, Flan-T5) and never an mT5's; CTranslate2's converter followed tie_word_embeddings, which
    transformers 5 always sets: beams and scores differed."""
    from transformers import AutoModelForSeq2SeqLM, MT5Config, T5Config

    sizes = dict(vocab_size=len(tokenizer), d_model=32, d_kv=16, d_ff=64, num_layers=1, num_heads=2,
                 pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                 decoder_start_token_id=tokenizer.pad_token_id, initializer_factor=5.0)
    config = MT5Config(**sizes) if kind == "mt5" else T5Config(**sizes, tie_word_embeddings=kind == "t5")
    torch.manual_seed(0)
    AutoModelForSeq2SeqLM.from_config(config).save_pretrained(tmp_path / kind)  # as a checkpoint is read
    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / kind).eval()
    assert model.config.tie_word_embeddings and getattr(model.config, "scale_decoder_outputs", False) == (kind == "t5")
    settings = {"max_new_tokens": 8, "num_beams": 3, "early_stopping": True}
    expected = decode(model, tokenizer, SOURCES, settings, "transformers", tmp_path)
    assert decode(model, tokenizer, SOURCES, settings, "ctranslate2", tmp_path) == expected
    assert len(set(expected)) > 1 and sum(map(len, expected)) > 30  # outputs long enough to tell apart
