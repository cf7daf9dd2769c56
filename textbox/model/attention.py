"""Which attention implementation a transformers model runs (``--attn_implementation``).

``auto`` keeps transformers' default (SDPA) except for bf16 on a CPU: torch 2.13's CPU kernels for
``scaled_dot_product_attention`` run bf16 attention several times slower than the explicit matrix products and
softmax of transformers' eager attention (float32 runs alike on all of them), and a bf16 training step is faster
with eager attention (docs/speedups.md, "Figures behind the code's choices"). Models without a choice (the RNNs)
keep theirs; textbox.config.family_keys refuses an explicit choice for them.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from textbox.config.errors import TextBoxUserError
from textbox.config.launcher import run_mixed_precision
from textbox.model.adapter_files import inner_model

if TYPE_CHECKING:
    from textbox.config import Config


def chosen(values: Config) -> str | None:
    """The implementation the run asks for (None: the model's own default)."""
    asked = values["attn_implementation"]
    if asked != "auto":
        return asked
    import torch

    if run_mixed_precision(values, os.environ) == "bf16" and not torch.cuda.is_available():
        return "eager"
    return None


def set_attention(model: object, implementation: str) -> bool:
    """Switch ``model`` (a PeftModel's base) to ``implementation``; False for a model without the choice."""
    inner = inner_model(model)
    config = getattr(inner, "config", None)
    if not hasattr(inner, "set_attn_implementation") or getattr(config, "_attn_implementation", None) is None:
        return False
    if config._attn_implementation == implementation:
        return True
    try:
        inner.set_attn_implementation(implementation)
    except (ValueError, ImportError) as error:
        raise TextBoxUserError(f"--attn_implementation={implementation}: the {config.model_type!r} model cannot use "
                               f"it ({str(error).splitlines()[0]}); choose another or auto") from error
    return True


# Implementations that follow the mask transformers builds for packed rows (textbox.data.packing): its flash
# attention reads packed position ids only in a batch of one row, and would let a row's examples attend to each other.
PACKABLE_ATTENTION = ("eager", "sdpa")


def check_packing(model: object) -> None:
    """--packing: refused for a model whose attention would cross the examples packed in a row."""
    config = getattr(inner_model(model), "config", None)
    implementation = getattr(config, "_attn_implementation", None)
    if implementation not in PACKABLE_ATTENTION:
        raise TextBoxUserError(f"--packing: the model runs {implementation!r} attention, which would let the examples "
                               f"packed in a row attend to each other; use --attn_implementation=sdpa (or eager), "
                               f"or drop --packing")
