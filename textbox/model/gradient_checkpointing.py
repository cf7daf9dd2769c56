"""Gradient checkpointing (``--gradient_checkpointing``): every layer's activations recomputed in the backward pass
instead of kept from the forward one, for less memory at the cost of about one more forward per step.

transformers models switch it on with ``activation_checkpointing_enable`` (its new name for
``gradient_checkpointing_enable``); the RNN models implement the same switch (textbox.model.rnn_model). Always
non-reentrant (``use_reentrant=False``): it needs no input that requires a gradient (a frozen embedding under
LoRA would otherwise leave the checkpointed layers without gradients), and it is what DistributedDataParallel
supports with or without find_unused_parameters (the reentrant form marks parameters ready twice and fails).
Dropout masks are the same in the recomputation (torch restores the random state), so loss and gradients equal
those without checkpointing up to float rounding. Checkpointing acts only in training mode.
"""
from __future__ import annotations

from typing import Any

from textbox.config.errors import TextBoxUserError
from textbox.model.adapter_files import inner_model

CHECKPOINT_SETTINGS = {"use_reentrant": False}


def enable_gradient_checkpointing(model: Any) -> None:
    """Switch checkpointing on in ``model`` (a PeftModel's base); a model class without it is refused by name."""
    inner = inner_model(model)
    if not getattr(inner, "supports_gradient_checkpointing", False):
        import transformers

        raise TextBoxUserError(f"--gradient_checkpointing=True: {type(inner).__name__} (model type "
                               f"{inner.config.model_type!r}) has no gradient checkpointing in transformers "
                               f"{transformers.__version__}; drop --gradient_checkpointing")
    inner.activation_checkpointing_enable(activation_checkpointing_kwargs=dict(CHECKPOINT_SETTINGS))
