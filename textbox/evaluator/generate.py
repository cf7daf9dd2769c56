"""Generation over a (possibly distributed) evaluation DataLoader, returning texts in the original order."""
from __future__ import annotations

from typing import Any

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from tqdm.auto import tqdm


def generation_settings(generation_kwargs: dict[str, Any], tgt_len: int) -> dict[str, Any]:
    """The user's generation_kwargs, with max_new_tokens defaulting to tgt_len."""
    settings = dict(generation_kwargs)
    if "max_length" not in settings:
        settings.setdefault("max_new_tokens", tgt_len)
    return settings


def one_line(text: str) -> str:
    """Generated text may contain newlines; every output must stay one line per example."""
    return " ".join(text.split())


@torch.no_grad()
def generate_texts(accelerator: Accelerator, model: torch.nn.Module, tokenizer: Any, loader: DataLoader,
                   settings: dict[str, Any], description: str) -> list[str]:
    """Decode every batch; gather_for_metrics restores dataset order and drops distributed padding."""
    unwrapped = accelerator.unwrap_model(model)
    was_training = unwrapped.training
    unwrapped.eval()
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    texts: list[str] = []
    for batch in tqdm(loader, desc=description, disable=not accelerator.is_local_main_process, leave=False):
        with accelerator.autocast():
            ids = unwrapped.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], **settings)
        ids = accelerator.pad_across_processes(ids, dim=1, pad_index=pad_id)
        ids = accelerator.gather_for_metrics(ids)
        texts.extend(one_line(text) for text in tokenizer.batch_decode(ids, skip_special_tokens=True))
    unwrapped.train(was_training)
    return texts
