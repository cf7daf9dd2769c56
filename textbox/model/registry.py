"""Model registry: name -> builder, resolved lazily so that config validation imports nothing heavy.

A builder is ``build(config, train_split) -> (model, tokenizer)``; ``train_split`` is the raw
training Split (needed by models that train their own tokenizer) or None when only testing.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from textbox.utils.suggest import suggest


@dataclass(frozen=True)
class ModelEntry:
    name: str
    builder: str  # "module.path:function", imported on first use
    needs_model_path: bool
    description: str
    family: str  # the row of textbox.model.keys.SUPPORT: which keys its builder honours, where


MODELS: dict[str, ModelEntry] = {}


def register(name: str, builder: str, needs_model_path: bool, description: str, family: str) -> None:
    """Add a model; a duplicate name, or a family whose key support is not declared, is a programming error."""
    from textbox.model.keys import SUPPORT

    key = name.lower()
    if key in MODELS:
        raise ValueError(f"model {key!r} is registered twice")
    if family not in SUPPORT:
        raise ValueError(f"model {key!r}: family {family!r} declares no key support in textbox.model.keys")
    MODELS[key] = ModelEntry(key, builder, needs_model_path, description, family)


def get_builder(name: str) -> Callable[..., Any]:
    key = name.lower()
    if key not in MODELS:
        raise KeyError(f"unknown model {name!r}{suggest(key, MODELS)}; available: {', '.join(sorted(MODELS))}")
    module_name, function_name = MODELS[key].builder.split(":")
    return getattr(importlib.import_module(module_name), function_name)


register("transformer", "textbox.model.transformer:build", False,
         "BART-architecture Transformer trained from scratch, with a byte-level BPE tokenizer trained on train.src/tgt",
         "transformer")
for _name in ("bart", "t5", "mbart", "pegasus", "marian", "led", "blenderbot", "prophetnet", "seq2seq"):
    register(_name, "textbox.model.hf_seq2seq:build", True,
             "Any Hugging Face encoder-decoder (AutoModelForSeq2SeqLM) from --model_path", "seq2seq")
register("bert2bert", "textbox.model.bert2bert:build", True,
         "EncoderDecoderModel warm-started from one encoder path (e.g. a BERT)", "encoder_decoder")
register("encoder_decoder", "textbox.model.bert2bert:build", True,
         "EncoderDecoderModel from an encoder (--model_path) and a decoder (--decoder_model_path) checkpoint",
         "encoder_decoder")
# Decoder-only LMs: their targets are tokenised as text + eos (textbox.data.tokenize reads this tuple).
DECODER_ONLY_MODELS = ("causal_lm", "gpt2", "opt", "llama")
for _name in DECODER_ONLY_MODELS:
    register(_name, "textbox.model.causal_lm:build", True,
             "Any Hugging Face decoder-only LM (AutoModelForCausalLM) from --model_path: source and target joined",
             "causal_lm")
for _name in ("rnn", "gru", "lstm"):
    register(_name, "textbox.model.rnn:build", False,
             "RNN encoder-decoder with attention trained from scratch, with the transformer's BPE tokenizer", "rnn")
