"""The from-scratch Transformer: BART's architecture with a BPE tokenizer trained on the training split.

A run saves it like any Hugging Face model, so ``--model_path=<run>/checkpoint_best`` reloads it here (or
with AutoModelForSeq2SeqLM / AutoTokenizer anywhere else).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, BartConfig, BartForConditionalGeneration

from textbox.config import Config, TextBoxUserError
from textbox.config.families import RNN_MODEL_TYPE
from textbox.model import quantization
from textbox.config.family_keys import config_settings
from textbox.model.loading import (from_pretrained, load_config, load_model, load_tokenizer,
                                   refused_settings, reject_unknown_config_kwargs, set_generation_length)
from textbox.model.built_model import BuiltModel, TrainingTexts
from textbox.model.tokenizer import split_tokenizer
from textbox.utils.logging import get_logger

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

DEFAULT_TOKENIZER: dict[str, int] = {"vocab_size": 8000, "min_frequency": 2}


def build(config: Config, train_split: TrainingTexts | None) -> BuiltModel:
    """Reload ``config.model_path`` as saved, or train a tokenizer on ``train_split`` and build a fresh model.

    configs/model/transformer.yaml's config_kwargs and tokenizer_kwargs describe a new model; over a checkpoint
    only the config_kwargs the user set apply (textbox.config.family_keys says which keys are honoured where).
    """
    if config.model_path:
        return BuiltModel(_reload(config), from_pretrained(AutoTokenizer.from_pretrained, config.model_path))
    if train_split is None:
        raise TextBoxUserError("model 'transformer' starts untrained: use --do_train=True to train it, or "
                               "--model_path=<a run's checkpoint directory, e.g. saved/<run>/checkpoint_best> "
                               "to test a trained one")
    tokenizer = new_model_tokenizer(config, train_split)
    check_tokenizer_facts(config.config_kwargs, tokenizer)
    model = BartForConditionalGeneration(_bart_config(config, tokenizer))  # generation_config copies its ids
    set_generation_length(model, config.tgt_len)
    return BuiltModel(model, tokenizer)


def _reload(config: Config) -> PreTrainedModel:
    """A saved encoder-decoder (its weights, or its architecture anew with from_scratch) with the config_kwargs
    the user set; anything else (a GPT-2, a BERT) gets a message naming the --model that loads it."""
    model_path = config.model_path
    try:
        model_config = load_config(model_path, config_settings(config, "config_kwargs"))
    except ValueError as error:  # a model type transformers does not know
        if not any(sign in str(error) for sign in ("Unrecognized", "does not recognize")):
            raise
        model_config = None
    if model_config is None or not model_config.is_encoder_decoder or \
            model_config.model_type == RNN_MODEL_TYPE:
        raise TextBoxUserError(f"--model_path={model_path} is not an encoder-decoder checkpoint, which --model="
                               f"transformer reloads; a decoder-only LM loads with --model=causal_lm (or gpt2, opt, "
                               f"llama), an encoder with --model=bert2bert, an RNN with --model=rnn/gru/lstm")
    return load_model(AutoModelForSeq2SeqLM, model_path, model_config, config.from_scratch,
                      quantization.of_config(config))


def new_model_tokenizer(config: Config, train_split: TrainingTexts) -> PreTrainedTokenizerBase:
    """The tokenizer of a new transformer or RNN: ``tokenizer_path``'s (TextBox 2.0 used bart-base's), or a BPE
    trained on the training split (and cached)."""
    if config.tokenizer_path:
        # the family yaml's BPE settings describe the trained BPE: only the settings the user gave apply
        return load_tokenizer(config.tokenizer_path, config_settings(config, "tokenizer_kwargs"),
                              named_by="--tokenizer_path")
    return split_tokenizer(train_split, **_tokenizer_settings(config), cache_dir=config.cache_dir,
                           log=get_logger().info, sample=config.tokenizer_train_sample, seed=config.seed)


def check_tokenizer_facts(settings: Mapping[str, object], tokenizer: PreTrainedTokenizerBase) -> None:
    """config_kwargs may restate the vocabulary size and special ids (TextBox 2.0's model yamls list them): they
    must be the tokenizer's, or the model would embed ids the tokenizer never makes (or miss some)."""
    facts = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
             "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id}
    wrong = [f"{name}={settings[name]!r} (the tokenizer's: {facts[name]!r})" for name in facts
             if name in settings and settings[name] != facts[name]]
    if wrong:
        raise TextBoxUserError(f"--config_kwargs: {', '.join(wrong)}: these follow the tokenizer (--tokenizer_path, "
                               f"or the BPE trained on the training split); drop them or give the tokenizer they "
                               f"describe as --tokenizer_path")


def _tokenizer_settings(config: Config) -> dict[str, int]:
    settings = {key: value for key, value in config.tokenizer_kwargs.items()
                if not (key == "use_fast" and value is True)}  # the trained BPE is a fast tokenizer
    unknown = set(settings) - set(DEFAULT_TOKENIZER)
    if unknown:
        raise TextBoxUserError(f"--tokenizer_kwargs: {', '.join(sorted(unknown))} not understood by the "
                               f"transformer model's BPE tokenizer; it takes {' and '.join(DEFAULT_TOKENIZER)}")
    return {**DEFAULT_TOKENIZER, **settings}


def _bart_config(config: Config, tokenizer: PreTrainedTokenizerBase) -> BartConfig:
    """Sizes from config_kwargs (configs/model/transformer.yaml holds the defaults, merged key by key with the
    user's), anything unset from BartConfig; vocabulary and special ids from the tokenizer."""
    base = {
        "vocab_size": len(tokenizer),
        "max_position_embeddings": _positions_needed(config),
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "forced_eos_token_id": tokenizer.eos_token_id,
        "decoder_start_token_id": tokenizer.eos_token_id,  # as in BART
    }
    with refused_settings():
        bart_config, unknown = BartConfig.from_dict(base, **config.config_kwargs, return_unused_kwargs=True)
    reject_unknown_config_kwargs(unknown, "bart")
    return bart_config


def _positions_needed(config: Config) -> int:
    """Learned positions must cover the longest source and the decoder start plus every generated token."""
    longest_generation = max(config.tgt_len, config.generation_kwargs.get("max_new_tokens", 0))
    return max(config.src_len, longest_generation + 1)
