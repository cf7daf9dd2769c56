"""Build the run's model: the one call the pipeline (and the benchmarks) make, returning a BuiltModel record.

Order: transformers learns the RNN checkpoint type first (an explicit, idempotent registration, so that whichever
builder meets an RNN checkpoint reads its config, whatever was imported before); the family's builder loads or
creates the model and tokenizer; a loaded efficient checkpoint is recorded (saving must write only what it
trains); --tokenizer_add_tokens are added (embeddings grown); the languages (--src_lang/--tgt_lang) are set on the
tokenizer and the generation config; a requested efficient method is applied; the record notes how the base was
quantised (saved beside the adapter); gradient checkpointing is switched on last. Nothing here decides numerics: the
builders do.

The builders (``BUILDERS``): the family's kind (textbox.config.families' table says which names exist and what each
one is) picks its builder, imported on first use so that config validation imports nothing heavy. A builder is
``build(config, train_split) -> BuiltModel`` (textbox.model.built_model); ``train_split`` is the raw training split
(its texts train the tokenizer of models that train their own) or None when only testing.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Sequence

import torch

from textbox.config import Config, TextBoxUserError
from textbox.config.families import CAUSAL_LM, ENCODER_DECODER, FAMILIES, KINDS, RNN, SEQ2SEQ, TRANSFORMER, family
from textbox.config.languages import apply_languages
from textbox.model.attention import chosen, set_attention
from textbox.model.efficient_checkpoint import checkpoint_record
from textbox.model.quantization import is_quantized, of_config
from textbox.model.built_model import BuiltModel, TrainingTexts
from textbox.utils.logging import get_logger
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


def build_model(config: Any, train_split: TrainingTexts | None, logger: Any = None) -> BuiltModel:
    """The model and tokenizer of ``config.model`` with what is known about them (see the module docstring).
    ``train_split`` (None when only testing) trains the tokenizer of models that train their own; ``logger``
    (textbox's by default) hears about the efficient method applied, the quantisation and checkpointing."""
    from textbox.model.rnn_model import register_auto_classes

    log = get_logger() if logger is None else logger
    register_auto_classes()
    built = get_builder(config.model)(config, train_split)
    check_position_limits(config, built.model)
    attention = chosen(config)
    if attention is not None and set_attention(built.model, attention):
        log.info(f"attention: {attention}" + (" (auto: bf16 on a CPU)" if config.attn_implementation == "auto" else ""))
    if not config.from_scratch:  # weights loaded from an adapter / BitFit checkpoint carry its method
        built = dataclasses.replace(built, efficient=built.efficient or checkpoint_record(config.model_path))
    add_tokens(config.tokenizer_add_tokens, built.model, built.tokenizer, log.info)
    apply_languages(config, built.model, built.tokenizer, log.info)
    if config.efficient_methods:
        from textbox.model.efficient import apply_efficient_methods

        built = apply_efficient_methods(config, built, log)
    used = of_config(config) if is_quantized(built.model) else None  # the keys, or the loaded checkpoint's record
    if used is not None:
        log.info(f"quantised base weights: {used.describe()}; frozen")
    if built.efficient is not None:  # saved beside the adapter, so that checkpoint_best reloads alike
        built = dataclasses.replace(built, efficient=dataclasses.replace(built.efficient, quantization=used))
    if config.gradient_checkpointing:
        from textbox.model.memory import enable_gradient_checkpointing

        enable_gradient_checkpointing(built.model)
        log.info("gradient checkpointing: every layer's activations are recomputed in the backward pass "
                 "(non-reentrant)")
    return built


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


# --- position tables --------------------------------------------------------------------------------------------------
# Source and target lengths against an encoder-decoder's position tables, checked when the model is built.
#
# Why: a learned or fixed sinusoidal position table (BART, mBART, Marian, Pegasus, Blenderbot, LED, ProphetNet, BERT
# pairs) has a last row; a longer sequence fails inside the first training or decoding step with "IndexError: index
# out of range in self", after the run directory exists. Relative or rotary positions (T5, Llama) have no table and
# no limit. The tables are found in the built model itself, so a checkpoint's real sizes decide, whatever its config
# calls them. Decoder-only LMs check their joined sequence before loading (textbox.model.causal_lm).

# Position tables whose first usable row is not row 0: BART-style learned positions start at their ``offset`` (an
# attribute of the module); ProphetNet's start after its padding index, its decoder's one row further (measured).
_UNUSABLE_ROWS = {"ProphetNetPositionalEmbeddings": 2}
_TABLE_NAMES = ("embed_positions", "position_embeddings", "wpe")


def position_limits(model: torch.nn.Module) -> dict[str, int]:
    """{"encoder": n, "decoder": m}: the longest sequence each side's position table can index (a side without a
    table is absent)."""
    limits: dict[str, int] = {}
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Embedding) or name.rsplit(".", 1)[-1] not in _TABLE_NAMES:
            continue
        side = "decoder" if ".decoder." in f".{name}" else "encoder" if ".encoder." in f".{name}" else None
        if side is None:
            continue
        unusable = getattr(module, "offset", None) or _UNUSABLE_ROWS.get(type(module).__name__, 0)
        limits[side] = min(limits.get(side, module.num_embeddings), module.num_embeddings - int(unusable))
    return limits


def check_position_limits(config: Config, model: torch.nn.Module) -> None:
    """src_len must fit the encoder's table, and the longest output (tgt_len, or generation_kwargs' max_new_tokens /
    max_length) the decoder's; else one message naming the key, before anything is written."""
    if not getattr(getattr(model, "config", None), "is_encoder_decoder", False):
        return
    limits = position_limits(model)
    generation = config.generation_kwargs
    output = max(config.tgt_len, generation.get("max_new_tokens") or 0, (generation.get("max_length") or 1) - 1)
    problems = []
    if "encoder" in limits and config.src_len > limits["encoder"]:
        problems.append(f"{config.where('src_len')}={config.src_len} exceeds the {limits['encoder']} positions of the "
                        f"model's encoder (prompts and special tokens count); lower --src_len to {limits['encoder']}")
    if "decoder" in limits and output > limits["decoder"]:
        asked = "tgt_len and generation_kwargs' max_new_tokens/max_length" if output != config.tgt_len else \
            config.where("tgt_len")
        problems.append(f"{asked}: outputs of {output} tokens exceed the {limits['decoder']} positions of the model's "
                        f"decoder; lower them to {limits['decoder']}")
    if problems:
        sizing = (" (or raise max_position_embeddings with --config_kwargs: the model is built from scratch)"
                  if config.from_scratch or not config.model_path else "")
        raise TextBoxUserError("; ".join(problems) + sizing + ". A longer sequence would fail inside the first "
                               "training or decoding step")


# --- added tokens -----------------------------------------------------------------------------------------------------
# --tokenizer_add_tokens: tokens added to the run's tokenizer (TextBox 2.0's multiwoz.yaml adds its 48
# delexicalisation tokens, [value_name], [db_0], ...), each then read as one token, with the model's embeddings
# grown to hold them (new rows initialised as transformers' resize does: the mean and covariance of the others).
#
# Added as ordinary tokens (``add_tokens``, as TextBox 2.0 did): generated ones stay in the output text, which is what
# a delexicalised reference holds. A checkpoint a run saved has them already: nothing is added again.
def add_tokens(tokens: Sequence[str], model: Any, tokenizer: Any, log: Callable[[str], None]) -> None:
    """Add ``tokens`` that ``tokenizer`` lacks and grow ``model``'s embeddings to every id it can now write."""
    if not tokens:
        return
    added = tokenizer.add_tokens(list(tokens))
    rows = model.get_input_embeddings().weight.shape[0]
    needed = max(len(tokenizer), max(tokenizer.convert_tokens_to_ids(list(tokens))) + 1)
    if needed > rows:
        try:
            model.resize_token_embeddings(needed)
        except (NotImplementedError, AttributeError) as error:
            raise TextBoxUserError(f"--tokenizer_add_tokens: the {type(model).__name__} cannot grow its embeddings "
                                   f"({error}); drop tokenizer_add_tokens") from error
        model.config.vocab_size = model.get_input_embeddings().weight.shape[0]
    log(f"tokenizer_add_tokens: {added} of {len(tokens)} tokens added to the tokenizer (the others it had); "
        f"embeddings {rows} -> {model.get_input_embeddings().weight.shape[0]} rows")
