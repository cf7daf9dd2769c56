"""Any Hugging Face encoder-decoder (BART, T5, Pegasus, ...) from a hub id or a local directory."""
from __future__ import annotations

from typing import TYPE_CHECKING

from transformers import AutoModelForSeq2SeqLM, PreTrainedModel

from textbox.config import Config, TextBoxUserError
from textbox.model import quantization
from textbox.model.loading import (load_config, load_model, load_tokenizer, set_generation_length,
                                   set_special_token_ids)
from textbox.model.built_model import BuiltModel, TrainingTexts

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def build(config: Config, train_split: TrainingTexts | None) -> BuiltModel:
    """Pretrained weights from ``config.model_path``, or its architecture freshly initialised (from_scratch).

    ``train_split`` is unused: the tokenizer comes with the model.
    """
    tokenizer = load_tokenizer(config.model_path, config.tokenizer_kwargs)
    model_config = load_config(config.model_path, config.config_kwargs)
    if not model_config.is_encoder_decoder:
        raise TextBoxUserError(f"--model_path={config.model_path} holds a {model_config.model_type!r} model, not "
                               f"an encoder-decoder; a decoder-only LM loads with --model=causal_lm (or gpt2, opt, llama), "
                               f"and --model=bert2bert warm-starts an encoder-decoder from an encoder")
    model = load_model(AutoModelForSeq2SeqLM, config.model_path, model_config, config.from_scratch,
                       quantization.of_config(config))
    _complete_special_tokens(model, tokenizer, config.model_path)
    set_generation_length(model, config.tgt_len)
    return BuiltModel(model, tokenizer)


def _complete_special_tokens(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, model_path: str) -> None:
    """Padding and the first decoder input must be known; fill one side from the other, or fail clearly."""
    pad = tokenizer.pad_token_id
    if pad is None:
        pad = getattr(model.config, "pad_token_id", None)  # some configs (v5) omit unset token ids entirely
    if pad is None:
        raise TextBoxUserError(f"--model_path={model_path}: neither its tokenizer nor its config defines a padding "
                               f"token; set one with --config_kwargs={{'pad_token_id': <id>}}")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.convert_ids_to_tokens(pad)
    start = getattr(model.config, "decoder_start_token_id", None)
    if start is None:
        start = model.generation_config.decoder_start_token_id
    if start is None:
        raise TextBoxUserError(f"--model_path={model_path}: its config has no decoder_start_token_id; set it with "
                               f"--config_kwargs={{'decoder_start_token_id': <id>}}")
    set_special_token_ids(model, pad_token_id=pad, decoder_start_token_id=start)
