"""Source and target lengths against an encoder-decoder's position tables, checked when the model is built.

Why: a learned or fixed sinusoidal position table (BART, mBART, Marian, Pegasus, Blenderbot, LED, ProphetNet, BERT
pairs) has a last row; a longer sequence fails inside the first training or decoding step with "IndexError: index
out of range in self", after the run directory exists. Relative or rotary positions (T5, Llama) have no table and
no limit. The tables are found in the built model itself, so a checkpoint's real sizes decide, whatever its config
calls them. Decoder-only LMs check their joined sequence before loading (textbox.model.causal_lm).
"""
from __future__ import annotations

from typing import Any

import torch

from textbox.config import Config, TextBoxUserError

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
