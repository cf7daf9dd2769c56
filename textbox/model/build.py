"""Build the run's model: the one call the pipeline (and the benchmarks) make, returning a BuiltModel record.

Order: transformers learns the RNN checkpoint type first (an explicit, idempotent registration, so that whichever
builder meets an RNN checkpoint reads its config, whatever was imported before); the family's builder loads or
creates the model and tokenizer; a loaded efficient checkpoint is recorded (saving must write only what it
trains); --tokenizer_add_tokens are added (embeddings grown); the languages (--src_lang/--tgt_lang) are set on the
tokenizer and the generation config; a requested efficient method is applied; the record notes how the base was
quantised (saved beside the adapter); gradient checkpointing is switched on last. Nothing here decides numerics: the
builders do.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from textbox.model.attention import chosen, set_attention
from textbox.model.efficient_checkpoint import checkpoint_record
from textbox.model.added_tokens import add_tokens
from textbox.config.languages import apply_languages
from textbox.model.positions import check_position_limits
from textbox.model.quantization import is_quantized, of_config
from textbox.model.built_model import BuiltModel, TrainingTexts
from textbox.model.registry import get_builder
from textbox.utils.logging import get_logger


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
