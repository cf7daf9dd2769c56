"""The builders: ``--model`` name -> the function that builds it, imported on first use so that config validation
imports nothing heavy.

Which names exist and what each one is (decoder-only, builds a new model, which keys it honours) is
textbox.config.families' table; a name's kind picks its builder here, and nothing else is said about a model here.
A builder is ``build(config, train_split) -> BuiltModel`` (textbox.model.built_model); ``train_split`` is the raw
training split (its texts train the tokenizer of models that train their own) or None when only testing.
textbox.model.build.build_model is the one caller.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

from textbox.config.families import CAUSAL_LM, ENCODER_DECODER, FAMILIES, KINDS, RNN, SEQ2SEQ, TRANSFORMER, family
from textbox.utils.suggest import suggest

# kind (textbox.config.families) -> its builder, "module.path:function", imported on first use
BUILDERS = {
    TRANSFORMER: "textbox.model.transformer:build",
    SEQ2SEQ: "textbox.model.hf_seq2seq:build",
    ENCODER_DECODER: "textbox.model.bert2bert:build",
    CAUSAL_LM: "textbox.model.causal_lm:build",
    RNN: "textbox.model.rnn:build",
}
if set(BUILDERS) != set(KINDS):  # a kind added to the table without its builder is a programming error
    raise ValueError(f"kinds without a builder: {sorted(set(KINDS) - set(BUILDERS))}; builders of no kind: "
                     f"{sorted(set(BUILDERS) - set(KINDS))}")


def get_builder(name: str) -> Callable[..., Any]:
    """The build function of ``--model=<name>`` (any case); KeyError naming the known models otherwise."""
    try:
        kind = family(name).kind.name
    except KeyError:
        key = name.lower()
        raise KeyError(f"unknown model {name!r}{suggest(key, FAMILIES)}; available: "
                       f"{', '.join(sorted(FAMILIES))}") from None
    module_name, function_name = BUILDERS[kind].split(":")
    return getattr(importlib.import_module(module_name), function_name)
