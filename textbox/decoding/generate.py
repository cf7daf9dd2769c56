"""Generation over a (possibly distributed) evaluation DataLoader, returning texts in the original order.

The efficient-decoding parts live in textbox.decoding: the engine choice (CTranslate2 or the generate loop below),
n-gram blocking without full-vocabulary copies, detokenisation overlapping generation. Batches come
length-sorted from Evaluator.loader, each example with its dataset ``index``.

With ``num_return_sequences=k`` generate returns k rows per example, best first; ``generate_sequences`` keeps all
k with their example, ``generate_texts`` the first (the one the metrics score and generation.txt holds), and
``write_generations`` writes both files.

Decoder-only LMs (textbox.data.causal) generate from ``prompt_ids``, the source left-padded so that every prompt
ends where generation continues; only the new tokens are kept.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from textbox.decoding.ctranslate2_settings import effective_config
from textbox.decoding.detokenize import BackgroundDetokenizer
from textbox.decoding.engine import DecodingOptions, choose_engine, not_converted
from textbox.decoding.lengths import new_token_bounds
from textbox.decoding.ngram_blocking import with_in_place_ngram_blocking
from textbox.config.families import is_decoder_only_model
from textbox.utils.atomic import write_text_atomic


def generation_settings(generation_kwargs: dict[str, Any], tgt_len: int) -> dict[str, Any]:
    """The user's generation_kwargs, with max_new_tokens defaulting to tgt_len. A bound the user gives in one form
    (max_length, min_length) clears the other form (max_new_tokens, min_new_tokens), which generate would otherwise
    take from the model's generation config (every checkpoint stores max_new_tokens = tgt_len) and rank above it."""
    settings = dict(generation_kwargs)
    if "max_length" in settings:
        settings.setdefault("max_new_tokens", None)
    else:
        settings.setdefault("max_new_tokens", tgt_len)
    if "min_length" in settings:
        settings.setdefault("min_new_tokens", None)
    return settings


def generate_texts(accelerator: Accelerator, model: torch.nn.Module, tokenizer: Any, loader: DataLoader,
                   settings: dict[str, Any], description: str, decoding: DecodingOptions | None = None) -> list[str]:
    """The first (best) generation of every example, in dataset order, on every process."""
    sequences = generate_sequences(accelerator, model, tokenizer, loader, settings, description, decoding)
    return [texts[0] for texts in sequences]


@torch.no_grad()
def generate_sequences(accelerator: Accelerator, model: torch.nn.Module, tokenizer: Any, loader: DataLoader,
                       settings: dict[str, Any], description: str,
                       decoding: DecodingOptions | None = None) -> list[list[str]]:
    """Decode every batch (each carries its examples' ``index``); every process returns, in dataset order, each
    example's num_return_sequences texts in generate's order (best first), whatever the batch order and the
    number of processes. ``decoding`` (the run's --decoding_backend/--decoding_precision; transformers when
    None) chooses the engine: CTranslate2 where the model converts and the settings map, else generate below."""
    decoding = decoding or DecodingOptions()
    engine = choose_engine(accelerator.unwrap_model(model), settings, description, decoding)
    if engine.name == "ctranslate2":
        from textbox.decoding.ctranslate2_cache import CannotConvert
        from textbox.decoding.ctranslate2_engine import ctranslate2_sequences

        try:
            return ctranslate2_sequences(accelerator, model, tokenizer, loader, settings, description, engine,
                                         decoding)
        except CannotConvert as error:  # raised before any batch is decoded
            not_converted(str(error), decoding)
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
        for batch in tqdm(loader, desc=description, disable=not accelerator.is_local_main_process, leave=False):
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
        sequences = detokenizer.sequences(len(loader.dataset))
    unwrapped.train(was_training)
    return sequences


def all_sequences_path(path: Path) -> Path:
    """Where all num_return_sequences texts go, next to the one-per-example file: generation.txt ->
    generation_all.txt, out.txt -> out_all.txt."""
    return path.with_name(f"{path.stem}_all{path.suffix}")


def write_generations(path: Path, sequences: list[list[str]]) -> Path | None:
    """``path`` gets each example's first text, one line per example; when there are several per example, all of
    them go to all_sequences_path(path), k lines per example, example after example. Returns that file's path."""
    write_text_atomic(path, "".join(texts[0] + "\n" for texts in sequences))
    if all(len(texts) == 1 for texts in sequences):
        return None
    every = all_sequences_path(path)
    write_text_atomic(every, "".join(text + "\n" for texts in sequences for text in texts))
    return every
