"""Decoding a list of sources the way a run does (Evaluator batches, generate_sequences, either engine), and the
reference: ``model.generate`` on the same batches, or on each example alone."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.decoding.detokenize import one_line
from textbox.decoding.engine import DecodingOptions
from textbox.decoding.generate import generate_sequences
from textbox.config.families import is_decoder_only_model


def evaluator(model: Any, tokenizer: Any, batch_size: int = 16, cpu: bool = True, **config: Any) -> Any:
    """An Evaluator for ``model``'s kind (decoder-only batches carry left-padded prompts); on the CPU unless
    ``cpu`` is False (then on the GPU, where its loader puts the batches)."""
    from accelerate import Accelerator

    from textbox.data.collate import CausalLMCollator
    from textbox.data.collate import Seq2SeqCollator
    from textbox.evaluator.evaluator import Evaluator

    collator = CausalLMCollator(tokenizer) if is_decoder_only_model(model) else Seq2SeqCollator(tokenizer.pad_token_id)
    return Evaluator(Config({**DEFAULTS, "eval_batch_size": batch_size, **config}), Accelerator(cpu=cpu), tokenizer,
                     collator)


def examples(model: Any, tokenizer: Any, sources: list[str]) -> list[dict[str, Any]]:
    """Tokenised sources (targets unused but for their length, which sorts the batches)."""
    if is_decoder_only_model(model):
        return [{"input_ids": tokenizer(source)["input_ids"], "labels": [tokenizer.eos_token_id]} for source in sources]
    return [{"input_ids": tokenizer(source)["input_ids"], "labels": []} for source in sources]


def decode(model: Any, tokenizer: Any, sources: list[str], settings: dict[str, Any], backend: str, cache: Path,
           batch_size: int = 16, cpu: bool = True) -> list[str]:
    """Every returned text (num_return_sequences per example, in dataset order) through generate_sequences, on the
    GPU where ``cpu`` is False."""
    built = evaluator(model, tokenizer, batch_size, cpu=cpu)
    loader = built.loader(examples(model, tokenizer, sources))
    sequences = generate_sequences(built.accelerator, model, tokenizer, loader, dict(settings), "test",
                                   DecodingOptions(backend, "float32", str(cache), 0))
    return [text for texts in sequences for text in texts]


@torch.no_grad()
def generate_on_batches(model: Any, tokenizer: Any, loader: Any, settings: dict[str, Any]) -> list[str]:
    """``model.generate`` with ``settings`` on each of ``loader``'s batches, texts in dataset order."""
    decoder_only = is_decoder_only_model(model)
    found: dict[int, list[str]] = {}
    for batch in loader:
        if decoder_only:
            inputs = {"input_ids": batch["prompt_ids"], "attention_mask": batch["prompt_attention_mask"]}
        else:
            inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
        ids = model.generate(**inputs, **settings)
        if decoder_only:
            ids = ids[:, inputs["input_ids"].shape[1]:]
        texts = [one_line(text) for text in tokenizer.batch_decode(ids, skip_special_tokens=True)]
        per_example = len(texts) // len(batch["index"])
        for number, index in enumerate(batch["index"].tolist()):
            found[index] = texts[number * per_example:(number + 1) * per_example]
    return [text for index in sorted(found) for text in found[index]]


@torch.no_grad()
def generate_alone(model: Any, tokenizer: Any, sources: list[str], settings: dict[str, Any]) -> list[str]:
    """``model.generate`` on each example by itself (no padding), as a decoder-only prompt where it is one."""
    texts = []
    for example in examples(model, tokenizer, sources):
        ids = example["input_ids"]
        if is_decoder_only_model(model) and (not ids or ids[-1] != tokenizer.eos_token_id):
            ids = [*ids, tokenizer.eos_token_id]  # the separator (textbox.data.collate)
        output = model.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                **settings)
        if is_decoder_only_model(model):
            output = output[:, len(ids):]
        texts.extend(one_line(text) for text in tokenizer.batch_decode(output, skip_special_tokens=True))
    return texts
