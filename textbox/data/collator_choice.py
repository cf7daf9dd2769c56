"""Which batch layout a run uses: denoising pre-training noises sources on the fly; decoder-only models read source
and target as one sequence; encoder-decoders take them apart. The choice asks the family table
(textbox.config.families), as tokenisation does, so that targets and batches always agree.

A module of its own so that the collators (collate.py, causal.py, denoising.py) never import each other back.
"""
from __future__ import annotations

from typing import Any

from textbox.config.families import is_decoder_only


def make_collator(config: Any, tokenizer: Any) -> Any:
    """The batch builder for this run (see the module docstring)."""
    from textbox.data.collate import Seq2SeqCollator

    if config.pretrain_task == "denoising":
        from textbox.data.denoising import DenoisingCollator

        return DenoisingCollator(config, tokenizer, Seq2SeqCollator(tokenizer.pad_token_id))
    if is_decoder_only(config.model):
        from textbox.data.causal import CausalLMCollator

        return CausalLMCollator(tokenizer)
    return Seq2SeqCollator(tokenizer.pad_token_id)
