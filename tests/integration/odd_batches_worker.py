"""Worker of test_trainer_defects: one SGD step (lr 1: the update is the gradient) of a tiny BART over 7 examples,
on one process in one batch (``alone``) or on 2 processes in 7 batches of one example (``shuffled``) or in token-budget
batches (``budget``), one accumulation window each; the main process saves the updated weights to ``out`` and prints
the number of batches of the epoch.

usage: python odd_batches_worker.py alone|shuffled|budget OUT TOKENIZER_CACHE
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
from textbox.data.split import Split
from tests.helpers import reverse_words_tokenizer, tiny_bart_config
from tests.unit.trainer.tiny import TINY_BART, WORDS, trainer_config


def main(mode: str, out: Path, cache: Path) -> None:
    torch.set_num_threads(1)
    tokenizer = reverse_words_tokenizer(cache)
    split = Split("train", [" ".join(WORDS[i:i + 4]) for i in range(7)],  # similar lengths: see "budget"
                  [[" ".join(reversed(WORDS[i:i + 4]))] for i in range(7)])
    sources, targets = tokenizer(split.sources)["input_ids"], tokenizer([t[0] for t in split.targets])["input_ids"]
    data = [{"input_ids": source, "labels": target} for source, target in zip(sources, targets)]
    batching = {
        "alone": {"train_batch_size": 7},
        "shuffled": {"train_batch_size": 1, "accumulation_steps": 8},  # 7 batches: 4 on one process, 3 on the other
        # a budget that holds any one example but no two: 7 batches
        "budget": {"max_tokens": max(len(s) + len(t) for s, t in zip(sources, targets)), "accumulation_steps": 8},
    }[mode]
    torch.manual_seed(0)
    model = BartForConditionalGeneration(tiny_bart_config(tokenizer, **TINY_BART))
    accelerator = Accelerator(cpu=True)
    config = trainer_config(optimizer="sgd", learning_rate=1.0, **batching)
    run_dir = out.parent / f"run-{mode}"
    run_dir.mkdir(parents=True, exist_ok=True)
    run = RunContext(config, accelerator, run_dir, logging.getLogger("textbox.tests"))
    trainer = loop.Trainer(TrainerContext(run, model, tokenizer, Seq2SeqCollator(tokenizer.pad_token_id)))
    assert trainer.fit(data, None).step == 1
    if accelerator.is_main_process:
        torch.save(dict(accelerator.unwrap_model(trainer.model).named_parameters()), out)
        if mode == "budget":
            from textbox.data.batching import TokenBudgetBatchSampler, column_lengths

            lengths = column_lengths(data, "input_ids"), column_lengths(data, "labels")
            print(f"batches: {TokenBudgetBatchSampler(*lengths, config.max_tokens, 0).real_batches}")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
