"""Worker of test_trainer_defects: one SGD step (lr 1: the update is the gradient) of a tiny BART on 8 examples,
one of which gives a NaN loss and is skipped (``skip``, run under 2 processes), or on the 7 others alone
(``alone``, 1 process); the main process saves the updated weights to ``out``.

usage: python skip_nan_worker.py skip|alone OUT TOKENIZER_CACHE
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import torch
from accelerate import Accelerator
from transformers import BartForConditionalGeneration

from textbox.data.collate import Seq2SeqCollator
from textbox.trainer import loop
from textbox.trainer.context import RunContext, TrainerContext
from tests.helpers import reverse_words_tokenizer, tiny_bart_config
from tests.unit.trainer.tiny import TINY_BART, reverse_words_split, trainer_config


def main(mode: str, out: Path, cache: Path) -> None:
    torch.set_num_threads(1)
    tokenizer = reverse_words_tokenizer(cache)
    split = reverse_words_split(8, seed=3)
    sources, targets = tokenizer(split.sources)["input_ids"], tokenizer([t[0] for t in split.targets])["input_ids"]
    data = [{"input_ids": source, "labels": target} for source, target in zip(sources, targets)]
    poisoned = data[5]["input_ids"]
    forward = loop.forward_token_losses

    def forward_with_nan(model, unwrapped, batch, label_smoothing=0.0, loss=None):
        sums, counts = forward(model, unwrapped, batch, label_smoothing, loss)
        if unwrapped.training and batch["input_ids"][0].tolist()[:len(poisoned)] == poisoned:
            return sums * float("nan"), counts
        return sums, counts

    loop.forward_token_losses = forward_with_nan
    if mode == "alone":
        data, batching = [e for e in data if e["input_ids"] != poisoned], {"train_batch_size": 7}
    else:  # 8 batches of 1 over 2 processes: one window of 4 on each
        batching = {"train_batch_size": 1, "accumulation_steps": 4}
    torch.manual_seed(0)
    model = BartForConditionalGeneration(tiny_bart_config(tokenizer, **TINY_BART))
    accelerator = Accelerator(cpu=True)
    config = trainer_config(optimizer="sgd", learning_rate=1.0, skip_nan_batches=True, **batching)
    run_dir = out.parent / f"run-{mode}"
    run_dir.mkdir(parents=True, exist_ok=True)
    run = RunContext(config, accelerator, run_dir, logging.getLogger("textbox.tests"))
    trainer = loop.Trainer(TrainerContext(run, model, tokenizer, Seq2SeqCollator(tokenizer.pad_token_id)))
    assert trainer.fit(data, None).step == 1
    if accelerator.is_main_process:
        torch.save(dict(accelerator.unwrap_model(trainer.model).named_parameters()), out)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
