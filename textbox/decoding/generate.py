"""Generation over a (possibly distributed) evaluation DataLoader, returning texts in the original order: the one
door to both engines (textbox.decoding.engine chooses CTranslate2, ctranslate2_engine.py, or transformers'
generate, transformers_engine.py). Batches come length-sorted from Evaluator.loader, each example with its
dataset ``index``.

With ``num_return_sequences=k`` generate returns k rows per example, best first; ``generate_sequences`` keeps all
k with their example, ``generate_texts`` the first (the one the metrics score and generation.txt holds), and
``write_generations`` writes both files.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader

from textbox.decoding.ctranslate2_cache import CTranslate2Failed
from textbox.decoding.ctranslate2_engine import ctranslate2_sequences
from textbox.decoding.engine import DecodingOptions, EngineChoices, after_failure, choose_engine
from textbox.decoding.transformers_engine import transformers_sequences
from textbox.utils.atomic import write_text_atomic

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def generation_settings(generation_kwargs: Mapping[str, object], tgt_len: int) -> dict[str, object]:
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


def generate_texts(accelerator: Accelerator, model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase,
                   loader: DataLoader, settings: Mapping[str, object], description: str,
                   decoding: DecodingOptions | None = None, choices: EngineChoices | None = None) -> list[str]:
    """The first (best) generation of every example, in dataset order, on every process."""
    sequences = generate_sequences(accelerator, model, tokenizer, loader, settings, description, decoding, choices)
    return [texts[0] for texts in sequences]


@torch.no_grad()
def generate_sequences(accelerator: Accelerator, model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase,
                       loader: DataLoader, settings: Mapping[str, object], description: str,
                       decoding: DecodingOptions | None = None,
                       choices: EngineChoices | None = None) -> list[list[str]]:
    """Decode every batch (each carries its examples' ``index``); every process returns, in dataset order, each
    example's num_return_sequences texts in generate's order (best first), whatever the batch order and the
    number of processes. ``decoding`` (the run's --decoding_backend/--decoding_precision; transformers when
    None) chooses the engine: CTranslate2 where the model converts and the settings map, else transformers.
    ``choices``: the run's record of its engines (textbox.decoding.engine.EngineChoices)."""
    decoding = decoding or DecodingOptions()
    engine = choose_engine(accelerator.unwrap_model(model), settings, description, decoding, tokenizer, choices)
    if engine.name == "ctranslate2":
        try:
            return ctranslate2_sequences(accelerator, model, tokenizer, loader, settings, description, engine,
                                         decoding)
        except CTranslate2Failed as error:  # raised on every process, before any text is returned
            after_failure(str(error), description, decoding, choices)
    return transformers_sequences(accelerator, model, tokenizer, loader, settings, description)


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
