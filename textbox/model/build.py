"""Build the run's model: the one call the pipeline (and the benchmarks) make, returning a BuiltModel record.

Order: transformers learns the RNN checkpoint type first (an explicit, idempotent registration, so that whichever
builder meets an RNN checkpoint reads its config, whatever was imported before); the family's builder loads or
creates the model and tokenizer; a loaded efficient checkpoint is recorded (saving must write only what it
trains); a requested efficient method is applied, then gradient checkpointing switched on. Nothing here decides
numerics: the builders do.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from textbox.model.efficient_checkpoint import checkpoint_record
from textbox.model.positions import check_position_limits
from textbox.model.record import BuiltModel, TrainingTexts
from textbox.model.registry import get_builder


def build_model(config: Any, train_split: TrainingTexts | None, logger: Any = None) -> BuiltModel:
    """The model and tokenizer of ``config.model`` with what is known about them (see the module docstring).
    ``train_split`` (None when only testing) trains the tokenizer of models that train their own; ``logger``
    (textbox's by default) hears about the efficient method applied."""
    from textbox.model.rnn_model import register_auto_classes

    register_auto_classes()
    built = get_builder(config.model)(config, train_split)
    check_position_limits(config, built.model)
    if not config.from_scratch:  # weights loaded from an adapter / BitFit checkpoint carry its method
        built = dataclasses.replace(built, efficient=built.efficient or checkpoint_record(config.model_path))
    if config.efficient_methods:
        from textbox.model.efficient import apply_efficient_methods

        from textbox.utils.logging import get_logger

        built = apply_efficient_methods(config, built, logger or get_logger())
    if config.gradient_checkpointing:
        from textbox.model.memory import enable_gradient_checkpointing
        from textbox.utils.logging import get_logger

        enable_gradient_checkpointing(built.model)
        (logger or get_logger()).info("gradient checkpointing: every layer's activations are recomputed in the "
                                      "backward pass (non-reentrant)")
    return built
