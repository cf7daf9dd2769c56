"""Lengths beyond an encoder-decoder's position tables are refused when the model is built (exit 2, before the run
directory exists), instead of "IndexError: index out of range in self" in the first training step."""
from __future__ import annotations

import warnings

import pytest
import torch
from transformers import AutoConfig, AutoModelForSeq2SeqLM

from textbox.config import TextBoxUserError
from textbox.model.build import check_position_limits, position_limits
from tests.unit.trainer.tiny import trainer_config

SIZES = dict(d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
             encoder_ffn_dim=16, decoder_ffn_dim=16, vocab_size=60)
MODELS = {
    "bart": dict(SIZES, max_position_embeddings=20),  # learned, offset 2
    "marian": dict(SIZES, max_position_embeddings=20, decoder_start_token_id=0, pad_token_id=0),  # sinusoidal
    "blenderbot": dict(SIZES, max_position_embeddings=20),  # learned, no offset
    "led": dict(SIZES, max_encoder_position_embeddings=20, max_decoder_position_embeddings=24, attention_window=[4]),
    "prophetnet": dict(hidden_size=16, encoder_ffn_dim=16, decoder_ffn_dim=16, num_encoder_layers=1,
                       num_decoder_layers=1, num_encoder_attention_heads=2, num_decoder_attention_heads=2,
                       max_position_embeddings=20, vocab_size=60, ngram=2),
    "t5": dict(d_model=16, d_kv=8, d_ff=16, num_layers=1, num_heads=2, vocab_size=60, decoder_start_token_id=0),
}


def _model(model_type: str) -> torch.nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoModelForSeq2SeqLM.from_config(AutoConfig.for_model(model_type, **MODELS[model_type])).eval()


def _runs(model: torch.nn.Module, side: str, length: int) -> bool:
    long, short = torch.full((1, length), 5), torch.full((1, 3), 5)
    try:
        with torch.no_grad():
            model(input_ids=long, decoder_input_ids=short) if side == "encoder" else \
                model(input_ids=short, decoder_input_ids=long)
    except IndexError:
        return False
    return True


@pytest.mark.parametrize("model_type", sorted(MODELS))
def test_the_limit_found_is_the_longest_sequence_that_runs(model_type):
    model = _model(model_type)
    limits = position_limits(model)
    if model_type == "t5":  # relative positions: no table, no limit
        assert limits == {} and _runs(model, "encoder", 48) and _runs(model, "decoder", 48)
        return
    for side, limit in limits.items():
        assert _runs(model, side, limit), (side, limit)
        if model_type != "prophetnet" or side == "decoder":  # ProphetNet's encoder clamps instead of failing
            assert not _runs(model, side, limit + 1), (side, limit)
    assert set(limits) == {"encoder", "decoder"}


def test_lengths_beyond_the_tables_name_the_keys():
    model = _model("bart")
    check_position_limits(trainer_config(src_len=20, tgt_len=20, model_path="x"), model)
    with pytest.raises(TextBoxUserError, match=r"src_len \(default\)=21 exceeds the 20 positions of the model's "
                                               r"encoder .* lower --src_len to 20"):
        check_position_limits(trainer_config(src_len=21, tgt_len=20, model_path="x"), model)
    with pytest.raises(TextBoxUserError, match="outputs of 30 tokens exceed the 20 positions of the model's decoder"):
        check_position_limits(trainer_config(src_len=20, tgt_len=16, generation_kwargs={"max_new_tokens": 30},
                                             model_path="x"), model)
