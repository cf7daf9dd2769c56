"""Generation over a (possibly distributed) evaluation DataLoader, returning texts in the original order.

The efficient-decoding parts live in textbox.decoding: cross-attention once per source under beam search,
n-gram blocking without full-vocabulary copies, detokenisation overlapping generation, and optionally a static
cache with a compiled forward. Batches come length-sorted from Trainer.eval_loader, each example with its
dataset ``index``.

Decoder-only LMs (textbox.data.causal) generate from ``prompt_ids``, the source left-padded so that every prompt
ends where generation continues; only the new tokens are kept. Cross-attention sharing does not apply to them.
"""
from __future__ import annotations

import contextlib
from typing import Any

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from textbox.decoding.compiled import compilation_seconds, is_compiled_decoding
from textbox.decoding.cross_attention import shared_cross_attention
from textbox.decoding.detokenize import BackgroundDetokenizer
from textbox.decoding.engine import choose_engine
from textbox.decoding.ngram_blocking import with_in_place_ngram_blocking
from textbox.trainer.loss import is_decoder_only
from textbox.utils.logging import get_logger


def generation_settings(generation_kwargs: dict[str, Any], tgt_len: int) -> dict[str, Any]:
    """The user's generation_kwargs, with max_new_tokens defaulting to tgt_len."""
    settings = dict(generation_kwargs)
    if "max_length" not in settings:
        settings.setdefault("max_new_tokens", tgt_len)
    return settings


@torch.no_grad()
def generate_texts(accelerator: Accelerator, model: torch.nn.Module, tokenizer: Any, loader: DataLoader,
                   settings: dict[str, Any], description: str) -> list[str]:
    """Decode every batch (each carries its examples' ``index``); every process returns all texts in dataset
    order, whatever the batch order and the number of processes."""
    # The engine (--decoding_backend): CTranslate2 where the model converts and the settings map
    # (textbox.decoding.engine), else transformers' generate below.
    engine = choose_engine(accelerator.unwrap_model(model), settings, description)
    if engine.name == "ctranslate2":
        from textbox.decoding.ctranslate2_engine import ctranslate2_texts

        return ctranslate2_texts(accelerator, model, tokenizer, loader, settings, description, engine)
    unwrapped = accelerator.unwrap_model(model)
    was_training = unwrapped.training
    unwrapped.eval()
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    num_beams = settings.get("num_beams") or unwrapped.generation_config.num_beams or 1  # None means 1
    settings = with_in_place_ngram_blocking(settings, unwrapped.generation_config)
    decoder_only = is_decoder_only(unwrapped)
    # Nothing to share without cross-attention; a static (compiled) cache is not combined with sharing.
    shares = not decoder_only and not is_compiled_decoding(settings)
    sharing = shared_cross_attention(unwrapped, num_beams) if shares else contextlib.nullcontext(dict)
    compiling_before = compilation_seconds() if is_compiled_decoding(settings) else 0.0
    with BackgroundDetokenizer(tokenizer) as detokenizer, sharing as extra:
        for batch in tqdm(loader, desc=description, disable=not accelerator.is_local_main_process, leave=False):
            if decoder_only:
                inputs = {"input_ids": batch["prompt_ids"], "attention_mask": batch["prompt_attention_mask"]}
            else:
                inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
            with accelerator.autocast():
                ids = unwrapped.generate(**inputs, **settings, **extra())
            if decoder_only:  # generate returns prompt + new tokens
                ids = ids[:, inputs["input_ids"].shape[1]:]
            ids = accelerator.pad_across_processes(ids, dim=1, pad_index=pad_id)
            detokenizer.submit(*accelerator.gather((ids, batch["index"])))
        texts = detokenizer.texts(len(loader.dataset))
    if is_compiled_decoding(settings):
        get_logger().info(f"decode_compile: {compilation_seconds() - compiling_before:.1f} s compiling during "
                          f"{description} generation")
    unwrapped.train(was_training)
    return texts
