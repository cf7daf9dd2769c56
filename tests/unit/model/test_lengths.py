"""Lengths fitted to the model (textbox.model.lengths): a length from a default or a yaml is lowered to what the model
holds, with a line saying what and why (TextBox 2.0's rules); a length the user typed is kept, or refused with the fix
before anything is written (instead of "IndexError: index out of range in self" in the first training step)."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoConfig, AutoModelForSeq2SeqLM, GPT2Config, GPT2LMHeadModel

from textbox.config import Config, TextBoxUserError
from textbox.config.schema import DEFAULTS
from textbox.model.lengths import FITTED, fit_lengths, position_limits

SAMSUM = "configs/dataset/samsum.yaml"
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
NO_LIMIT = SimpleNamespace(model_max_length=int(1e30))  # what transformers gives a tokenizer without a maximum


def _model(model_type: str) -> torch.nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoModelForSeq2SeqLM.from_config(AutoConfig.for_model(model_type, **MODELS[model_type])).eval()


def _gpt2(positions: int = 1024) -> GPT2LMHeadModel:
    return GPT2LMHeadModel(GPT2Config(vocab_size=60, n_positions=positions, n_embd=16, n_layer=1, n_head=2))


def config(typed: dict | None = None, files: dict | None = None, yaml: dict | None = None, **values) -> Config:
    """A run's config: ``typed`` keys from the command line, ``files`` from a --config_files file (my.yaml),
    ``yaml`` from the samsum catalogue entry, ``values`` at the defaults' origin (no layer named)."""
    typed, files, yaml = typed or {}, files or {}, yaml or {}
    sources = {**{key: SAMSUM for key in yaml}, **{key: "my.yaml" for key in files},
               **{key: "command line" for key in typed}}
    merged = {**DEFAULTS, "model_path": "pretrained", "config_files": ["my.yaml"] if files else [],
              **values, **yaml, **files, **typed}
    return Config(merged, sources)


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


def test_yaml_lengths_are_fitted_to_an_encoder_decoders_tables_and_the_line_says_so():
    fitting = fit_lengths(config(yaml={"src_len": 1024, "tgt_len": 128}), _model("bart"), NO_LIMIT)
    assert (fitting.config.src_len, fitting.config.tgt_len) == (20, 20)
    assert fitting.config.source_of("src_len") == FITTED
    assert fitting.changed == {"src_len": (1024, 20), "tgt_len": (128, 20)}
    line = fitting.log_line()
    assert line.startswith("lengths fitted to the model: src_len 1024 -> 20, tgt_len 128 -> 20: ")
    assert "the model's encoder has 20 positions" in line and SAMSUM in line
    assert fitting.record() == {"src_len": {"given": 1024, "fitted": 20}, "tgt_len": {"given": 128, "fitted": 20},
                                "why": fitting.why}
    # our own default src_len (256) over a checkpoint with fewer positions: fitted as well
    assert fit_lengths(config(), _model("bart"), NO_LIMIT).config.src_len == 20
    unchanged = config(yaml={"src_len": 16, "tgt_len": 8})
    assert fit_lengths(unchanged, _model("bart"), NO_LIMIT).config is unchanged  # nothing to fit: the same config


def test_bert2bert_on_samsums_settings_fits_its_512_positions():
    """TextBox 2.0's `--model=BERT2BERT ... --dataset=samsum`: both BERT halves' position tables bound the lengths."""
    from transformers import BertConfig, EncoderDecoderConfig, EncoderDecoderModel

    half = dict(vocab_size=60, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                max_position_embeddings=512)
    pair = EncoderDecoderModel(EncoderDecoderConfig.from_encoder_decoder_configs(
        BertConfig(**half), BertConfig(**half, is_decoder=True, add_cross_attention=True)))
    assert position_limits(pair) == {"encoder": 512, "decoder": 512}
    fitting = fit_lengths(config(yaml={"src_len": 1024, "tgt_len": 128}), pair, SimpleNamespace(model_max_length=512))
    assert fitting.changed == {"src_len": (1024, 512)}


def test_a_typed_length_is_kept_or_refused_with_the_fix():
    kept = fit_lengths(config(typed={"src_len": 12}, yaml={"tgt_len": 128}), _model("bart"), NO_LIMIT)
    assert (kept.config.src_len, kept.config.tgt_len) == (12, 20)  # typed kept, the yaml's fitted
    with pytest.raises(TextBoxUserError, match=r"--src_len=30 exceeds the 20 positions of the model's encoder "
                                               r".*lower --src_len to 20.*one you give is kept, or refused"):
        fit_lengths(config(typed={"src_len": 30}), _model("bart"), NO_LIMIT)
    with pytest.raises(TextBoxUserError, match=r"src_len \(from my.yaml\)=30 exceeds the 20 positions"):
        fit_lengths(config(files={"src_len": 30}), _model("bart"), NO_LIMIT)  # --config_files count as typed
    with pytest.raises(TextBoxUserError, match="max_new_tokens/max_length: outputs of 30 tokens exceed the 20 "
                                               "positions of the model's decoder; lower them to 20"):
        fit_lengths(config(generation_kwargs={"max_new_tokens": 30}), _model("bart"), NO_LIMIT)


def test_the_tokenizers_model_max_length_bounds_pretrained_weights_as_in_textbox():
    t5, tokenizer = _model("t5"), SimpleNamespace(model_max_length=512)  # relative positions: no table
    fitted = fit_lengths(config(yaml={"src_len": 1024, "tgt_len": 128}), t5, tokenizer)
    assert fitted.changed == {"src_len": (1024, 512)} and "model_max_length is 512" in fitted.why
    assert fit_lengths(config(typed={"src_len": 1024}), t5, tokenizer).config.src_len == 1024  # typed: T5 runs it
    new = config(yaml={"src_len": 1024}, from_scratch=True)  # new weights were trained for no length
    assert fit_lengths(new, t5, tokenizer).config.src_len == 1024


def test_a_decoder_only_lm_splits_its_positions_as_textbox_does():
    gpt2 = _gpt2()
    fitting = fit_lengths(config(yaml={"src_len": 1024, "tgt_len": 128}), gpt2, NO_LIMIT)
    assert (fitting.config.src_len, fitting.config.tgt_len) == (910, 113)  # 910 + 1 separator + 113 = 1024
    assert "this 'gpt2' model has 1024 positions" in fitting.why and "in proportion" in fitting.why
    one_typed = fit_lengths(config(typed={"tgt_len": 200}, yaml={"src_len": 1024}), gpt2, NO_LIMIT).config
    assert (one_typed.src_len, one_typed.tgt_len) == (823, 200)
    with pytest.raises(TextBoxUserError, match="--tgt_len=1023 leaves no room for the source: this 'gpt2' model "
                                               "has 1024 positions"):
        fit_lengths(config(typed={"tgt_len": 1023}, yaml={"src_len": 1024}), gpt2, NO_LIMIT)
    with pytest.raises(TextBoxUserError, match=r"1000 \+ 1 \+ 128 tokens \(--src_len, --tgt_len\) exceed the 1024 "
                                               r"positions of this 'gpt2' model"):
        fit_lengths(config(typed={"src_len": 1000, "tgt_len": 128}), gpt2, NO_LIMIT)


def test_virtual_tokens_take_their_positions_from_the_fitted_lengths():
    prompts = {"efficient_methods": ["prompt-tuning"], "efficient_kwargs": {"num_virtual_tokens": 5}}
    bart = fit_lengths(config(yaml={"src_len": 1024, "tgt_len": 8}, **prompts), _model("bart"), NO_LIMIT)
    assert bart.changed == {"src_len": (1024, 15)} and "5 of them taken by prompt-tuning" in bart.why
    prefix = fit_lengths(config(yaml={"src_len": 8, "tgt_len": 128}, efficient_methods=["prefix-tuning"],
                                efficient_kwargs={"num_virtual_tokens": 5}), _model("bart"), NO_LIMIT)
    assert prefix.changed == {"tgt_len": (128, 15)}  # prefixes sit before the decoder's tokens
    # TextBox 2.0's prompt tuning on samsum (prompt_length: 100) with GPT-2: 1024 - 100 - 113 - 1 separator
    lm = fit_lengths(config(yaml={"src_len": 1024, "tgt_len": 128}, efficient_methods=["prompt-tuning"],
                            efficient_kwargs={"num_virtual_tokens": 100}), _gpt2(), NO_LIMIT).config
    assert (lm.src_len, lm.tgt_len) == (810, 113)
    with pytest.raises(TextBoxUserError, match=r"--src_len=18 \+ 5 virtual tokens of prompt-tuning exceeds the 20 "
                                               r"positions of the model's encoder.*lower --src_len to 15"):
        fit_lengths(config(typed={"src_len": 18}, **prompts), _model("bart"), NO_LIMIT)
