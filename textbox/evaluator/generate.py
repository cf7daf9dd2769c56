"""Generation over a (possibly distributed) evaluation DataLoader, returning texts in the original order.

The efficient-decoding parts live in textbox.decoding: cross-attention once per source under beam search,
n-gram blocking without full-vocabulary copies, and detokenisation overlapping generation. Batches come length-sorted from Trainer.eval_loader, each example with
its dataset ``index``.
"""
from __future__ import annotations

from typing import Any

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from textbox.decoding.cross_attention import shared_cross_attention
from textbox.decoding.detokenize import BackgroundDetokenizer
from textbox.decoding.ngram_blocking import with_in_place_ngram_blocking


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
    unwrapped = accelerator.unwrap_model(model)
    was_training = unwrapped.training
    unwrapped.eval()
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    num_beams = settings.get("num_beams") or unwrapped.generation_config.num_beams or 1  # None means 1
    settings = with_in_place_ngram_blocking(settings, unwrapped.generation_config)
    with BackgroundDetokenizer(tokenizer) as detokenizer, shared_cross_attention(unwrapped, num_beams) as extra:
        for batch in tqdm(loader, desc=description, disable=not accelerator.is_local_main_process, leave=False):
            with accelerator.autocast():
                ids = unwrapped.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                         **settings, **extra())
            ids = accelerator.pad_across_processes(ids, dim=1, pad_index=pad_id)
            detokenizer.submit(*accelerator.gather((ids, batch["index"])))
        texts = detokenizer.texts(len(loader.dataset))
    unwrapped.train(was_training)
    return texts
