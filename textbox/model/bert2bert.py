"""BERT2BERT: an EncoderDecoderModel warm-started from one encoder checkpoint used on both sides.

The decoder gets new cross-attention layers, so a model built from an encoder must be trained; a saved
encoder-decoder checkpoint (e.g. a run's checkpoint_best) is reloaded as it is.
"""
from __future__ import annotations

from typing import Any

from transformers import AutoConfig, AutoTokenizer, EncoderDecoderModel

from textbox.config import Config, TextBoxUserError
from textbox.data.split import Split
from textbox.model.loading import from_pretrained, load_config, set_generation_length, set_special_token_ids


def build(config: Config, train_split: Split | None) -> tuple[EncoderDecoderModel, Any]:
    """Reload a saved encoder-decoder, or warm-start one from an encoder (config_kwargs apply to both halves)."""
    path = config.model_path
    tokenizer = from_pretrained(AutoTokenizer.from_pretrained, path, **config.tokenizer_kwargs)
    saved_config = from_pretrained(AutoConfig.from_pretrained, path)
    if saved_config.model_type == "encoder-decoder":
        return from_pretrained(EncoderDecoderModel.from_pretrained, path), tokenizer
    if saved_config.is_encoder_decoder:
        raise TextBoxUserError(f"--model_path={path} holds a {saved_config.model_type!r} encoder-decoder; "
                               f"load it with --model={saved_config.model_type} (bert2bert needs an encoder)")
    if train_split is None:
        raise TextBoxUserError(f"--model=bert2bert from the encoder {path} has an untrained decoder: use "
                               f"--do_train=True, or --model_path=<a run's checkpoint_best> to test a trained one")
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    if cls is None or sep is None or tokenizer.pad_token_id is None:
        raise TextBoxUserError(f"--model_path={path}: bert2bert needs a tokenizer with [CLS], [SEP] and [PAD] "
                               f"tokens (they start, end and pad targets); this one lacks some")
    model = from_pretrained(
        EncoderDecoderModel.from_encoder_decoder_pretrained, path, decoder_pretrained_model_name_or_path=path,
        # two separate configs: the decoder's is switched to causal attention with cross-attention
        encoder_config=load_config(path, config.config_kwargs), decoder_config=load_config(path, config.config_kwargs))
    model.config.vocab_size = model.config.decoder.vocab_size
    set_special_token_ids(model, decoder_start_token_id=cls, bos_token_id=cls, eos_token_id=sep,
                          pad_token_id=tokenizer.pad_token_id)
    set_generation_length(model, config.tgt_len)
    return model, tokenizer
