"""Decoder-only language models (GPT-2, OPT, Llama, ...: any ``AutoModelForCausalLM``) for source -> target tasks.

Source and target are joined into one sequence, ``source eos target eos`` (the first eos separates them and is
not repeated when the tokenizer already ends the source with it), and only the target tokens count in the
loss (textbox.data.collate builds the batches, textbox.model.loss shifts the logits by one). Generation continues
the left-padded ``source eos`` and keeps only the new tokens (textbox.decoding.generate).

Max lengths are split between source and target: ``--src_len`` bounds the source part (prompts and the
tokenizer's own special tokens included, e.g. Llama's <s>) and ``--tgt_len`` the target part (its closing eos
included; also the default number of generated tokens). A joined sequence is therefore at most
``src_len + 1 + tgt_len`` tokens long, which must fit the model's positions (``max_position_embeddings``):
lengths from a default or a yaml are fitted to them, typed ones checked (textbox.model.lengths).

The source is encoded as the tokenizer encodes text (GPT-2 adds nothing, Llama adds <s>; ``--prefix_prompt`` and
``--suffix_prompt`` add words), then the separating eos; the target is encoded without special tokens, then eos.
Set the generation length with ``max_new_tokens`` (the default, tgt_len), not ``max_length``, which here would
count the source too. A tokenizer without a padding token pads with eos (labels and attention masks come from
lengths, never from the pad id).

With a chat template (the tokenizer's, or --chat_template, set on the tokenizer here so that checkpoints save it)
examples are rendered as chat turns instead (textbox.data.chat; --use_chat_template says when).

Testing a checkpoint needs the model name too: ``--model=gpt2 --model_path=<run>/checkpoint_best --do_train=False``
(without it --model defaults to the encoder-decoder ``transformer``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from transformers import AutoModelForCausalLM, PretrainedConfig, PreTrainedModel

from textbox.config import Config, TextBoxUserError
from textbox.model import quantization
from textbox.model.loading import (load_config, load_model, load_tokenizer, set_generation_length,
                                   set_special_token_ids)
from textbox.model.built_model import BuiltModel, TrainingTexts
from textbox.tokens import chat

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


# Model types whose attention keeps packed examples apart from position ids alone (textbox.data.packing): each was
# checked in transformers 5 (1-layer models, eager and sdpa: a packed example's logits equal its logits alone;
# tests/unit/data/test_packing.py keeps llama and gpt2 checked). OPT (positions from the attention mask) and Bloom
# (ALiBi) fail that check; other types are refused until checked.
PACKABLE_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "phi3", "gpt2", "gpt_neox")


def build(config: Config, train_split: TrainingTexts | None) -> BuiltModel:
    """Pretrained weights from ``config.model_path``, or its architecture freshly initialised (from_scratch);
    ``config_kwargs`` override the model config. ``train_split`` is unused: the tokenizer comes with the model."""
    path = config.model_path
    model_config = load_config(path, config.config_kwargs)
    if model_config.is_encoder_decoder:
        raise TextBoxUserError(f"--model_path={path} holds a {model_config.model_type!r} encoder-decoder, not a "
                               f"decoder-only LM; load it with --model={model_config.model_type} "
                               f"(or --model=seq2seq)")
    if config.packing and model_config.model_type not in PACKABLE_MODEL_TYPES:
        raise TextBoxUserError(f"--packing: --model_path={path} is a {model_config.model_type!r} model, whose "
                               f"attention would cross the examples packed in a row (it does not restart at the "
                               f"position ids, or its positions come from the attention mask); drop --packing "
                               f"(packable: {', '.join(PACKABLE_MODEL_TYPES)})")
    tokenizer = load_tokenizer(path, config.tokenizer_kwargs)
    model = load_model(AutoModelForCausalLM, path, model_config, config.from_scratch, quantization.of_config(config))
    _complete_special_tokens(model, tokenizer, path)
    chat.apply_template(config.chat_template, tokenizer)  # saved with the tokenizer: checkpoints keep it
    chat.templating(config, tokenizer)  # a template asked for that a hub tokenizer lacks: refused before training
    set_generation_length(model, config.tgt_len)
    return BuiltModel(model, tokenizer)


def _complete_special_tokens(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, model_path: str) -> None:
    """eos ends every target and stops generation; padding falls back to eos when the tokenizer has none."""
    eos = tokenizer.eos_token_id
    if eos is None:
        eos = _config_id(model.config, "eos_token_id")
        if eos is None:
            raise TextBoxUserError(f"--model_path={model_path}: neither its tokenizer nor its config defines an "
                                   f"end-of-sequence token, which ends every target; give the tokenizer one")
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(eos)
    if tokenizer.pad_token_id is None:
        pad = _config_id(model.config, "pad_token_id")
        tokenizer.pad_token = tokenizer.convert_ids_to_tokens(eos if pad is None else pad)
    ids = {"eos_token_id": eos, "pad_token_id": tokenizer.pad_token_id}
    listed = model.generation_config.eos_token_id
    if isinstance(listed, (list, tuple)) and eos in listed:
        ids["eos_token_id"] = list(listed)  # e.g. Llama 3's several end tokens: generation stops at any of them
    if tokenizer.bos_token_id is not None:
        ids["bos_token_id"] = tokenizer.bos_token_id
    set_special_token_ids(model, **ids)


def _config_id(model_config: PretrainedConfig, name: str) -> int | None:
    """A single token id from the model config (some configs list several eos ids: the first is taken)."""
    value = getattr(model_config, name, None)
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return value
