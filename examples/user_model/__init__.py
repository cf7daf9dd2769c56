"""A model family of your own, registered from outside TextBox: ``--model=vaswani --user_dir=examples/user_model``.

``vaswani`` is the from-scratch Transformer with two choices of the original Transformer ("Attention Is All You
Need") that BART changed back: ReLU feed-forward layers (BART: GELU) and token embeddings scaled by sqrt(d_model)
(BART: unscaled). A setting you give in --config_kwargs wins over both. Everything else (the BPE tokenizer trained on
the training split, the sizes in --config_kwargs, reloading a checkpoint) is the built-in transformer's builder, so
the family's kind is "transformer": it honours what --model=transformer honours (docs/model_keys.md), and its
checkpoints are BART's type, which CTranslate2 decodes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import textbox

if TYPE_CHECKING:
    from textbox.config import Config
    from textbox.model.built_model import TrainingTexts

ORIGINAL_TRANSFORMER = {"activation_function": "relu", "scale_embedding": True}


def build(config: Config, train_split: TrainingTexts | None) -> textbox.BuiltModel:
    """A new model with the original Transformer's choices; a checkpoint (--model_path) reloaded as saved."""
    from textbox.model import transformer  # torch and transformers: only when a model is built, not at the check

    if not config.model_path:
        config = config.replace(config_kwargs={**ORIGINAL_TRANSFORMER, **config.config_kwargs})
    return transformer.build(config, train_split)


textbox.register_model("vaswani", build, kind="transformer")
