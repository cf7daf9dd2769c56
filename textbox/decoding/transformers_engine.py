"""The transformers engine: ``model.generate`` over a (possibly distributed) evaluation DataLoader, for every model
and setting (textbox.decoding.engine chooses it where CTranslate2 cannot decode). Texts come back in dataset order.

Decoder-only LMs (textbox.data.collate) generate from ``prompt_ids``, the source left-padded so that every prompt
ends where generation continues; only the new tokens are kept.

What transformers 5 already does is left to it (checked in tests/unit/decoding: the encoder runs once per source
under beam search; bf16 is the accelerator's autocast, ``--mixed_precision=bf16``). What this engine adds: n-gram
blocking that writes only the banned scores and leaves a decoder-only model's left padding out of the n-grams
(ngram_blocking.py), and detokenisation on a background thread while the next batch generates (detokenize.py).
"""
from __future__ import annotations

from typing import Mapping

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

from textbox.config.families import is_decoder_only_model
from textbox.decoding.detokenize import BackgroundDetokenizer
from textbox.decoding.generation_config import effective_config
from textbox.decoding.lengths import new_token_bounds
from textbox.decoding.ngram_blocking import with_in_place_ngram_blocking
from textbox.utils.progress import bar_disabled


@torch.no_grad()
def transformers_sequences(accelerator: Accelerator, model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase,
                           loader: DataLoader, settings: Mapping[str, object], description: str) -> list[list[str]]:
    """Every example's num_return_sequences texts, best first, in dataset order, on every process."""
    unwrapped = accelerator.unwrap_model(model)
    was_training = unwrapped.training
    unwrapped.eval()
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    effective = effective_config(unwrapped.generation_config, settings)
    settings = with_in_place_ngram_blocking(settings, unwrapped.generation_config)
    if settings.get("stop_strings") is not None:
        settings = {**settings, "tokenizer": tokenizer}  # generate turns stop strings into tokens with it
    decoder_only = is_decoder_only_model(unwrapped)
    with BackgroundDetokenizer(tokenizer) as detokenizer:
        for batch in tqdm(loader, desc=description, disable=bar_disabled(accelerator.is_local_main_process),
                          leave=False):
            if decoder_only:
                inputs = {"input_ids": batch["prompt_ids"], "attention_mask": batch["prompt_attention_mask"]}
            else:
                inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
            # where max_length leaves no room for a new token: a clear error instead of generate's ValueError
            new_token_bounds(effective, inputs["input_ids"].shape[1] if decoder_only else 1)
            with accelerator.autocast():
                ids = unwrapped.generate(**inputs, **settings)
            if decoder_only:  # generate returns prompt + new tokens
                ids = ids[:, inputs["input_ids"].shape[1]:]
            ids = accelerator.pad_across_processes(ids, dim=1, pad_index=pad_id)
            detokenizer.submit(*accelerator.gather((ids, batch["index"])))
        # the loader's dataset (the Evaluator's EvalExamples) has a length; torch's Dataset annotation declares none
        sequences = detokenizer.sequences(len(loader.dataset))  # type: ignore[arg-type]
    unwrapped.train(was_training)
    return sequences
