"""Model registry: ``--model`` name -> builder, resolved lazily so that config validation imports nothing heavy.

Which names exist and what each one is (decoder-only, builds a new model, ...) is textbox.config.families'
table; an entry here adds the builder that loads it. A builder is ``build(config, train_split) -> BuiltModel``
(textbox.model.built_model); ``train_split`` is the raw training split (its texts train the tokenizer of models that
train their own) or None when only testing. textbox.model.build.build_model is the one caller.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from textbox.config.families import (CAUSAL_LM, ENCODER_DECODER, FAMILIES, RNN, SEQ2SEQ, TRANSFORMER, Family)
from textbox.utils.suggest import suggest

# kind (textbox.config.families) -> its builder, "module.path:function", imported on first use
BUILDERS = {
    TRANSFORMER: "textbox.model.transformer:build",
    SEQ2SEQ: "textbox.model.hf_seq2seq:build",
    ENCODER_DECODER: "textbox.model.bert2bert:build",
    CAUSAL_LM: "textbox.model.causal_lm:build",
    RNN: "textbox.model.rnn:build",
}
_DESCRIPTIONS = {
    TRANSFORMER: "BART-architecture Transformer trained from scratch, with a byte-level BPE tokenizer trained on "
                 "train.src/tgt",
    SEQ2SEQ: "Any Hugging Face encoder-decoder (AutoModelForSeq2SeqLM) from --model_path",
    CAUSAL_LM: "Any Hugging Face decoder-only LM (AutoModelForCausalLM) from --model_path: source and target joined",
    RNN: "RNN encoder-decoder with attention trained from scratch, with the transformer's BPE tokenizer",
    "bert2bert": "EncoderDecoderModel warm-started from one encoder path (e.g. a BERT)",
    "encoder_decoder": "EncoderDecoderModel from an encoder (--model_path) and a decoder (--decoder_model_path) "
                       "checkpoint",
}


@dataclass(frozen=True)
class ModelEntry:
    name: str
    builder: str  # "module.path:function", imported on first use
    description: str
    facts: Family  # what the model is (textbox.config.families)

    @property
    def needs_model_path(self) -> bool:
        return self.facts.needs_model_path

    @property
    def family(self) -> str:
        """The row of textbox.config.family_keys.SUPPORT: which keys its builder honours, where (the family's kind)."""
        return self.facts.kind.name


MODELS: dict[str, ModelEntry] = {}


def register(facts: Family, builder: str, description: str) -> None:
    """Add a model; a duplicate name, or a kind whose key support is not declared, is a programming error."""
    from textbox.config.family_keys import SUPPORT

    if facts.name in MODELS:
        raise ValueError(f"model {facts.name!r} is registered twice")
    if facts.kind.name not in SUPPORT:
        raise ValueError(f"model {facts.name!r}: kind {facts.kind.name!r} declares no key support in "
                         f"textbox.config.family_keys")
    MODELS[facts.name] = ModelEntry(facts.name, builder, description, facts)


def get_builder(name: str) -> Callable[..., Any]:
    key = name.lower()
    if key not in MODELS:
        raise KeyError(f"unknown model {name!r}{suggest(key, MODELS)}; available: {', '.join(sorted(MODELS))}")
    module_name, function_name = MODELS[key].builder.split(":")
    return getattr(importlib.import_module(module_name), function_name)


for _facts in FAMILIES.values():
    register(_facts, BUILDERS[_facts.kind.name], _DESCRIPTIONS.get(_facts.name, _DESCRIPTIONS[_facts.kind.name]))
