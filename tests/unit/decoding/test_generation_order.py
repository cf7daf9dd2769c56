"""generate_texts over Trainer.eval_loader's length-sorted batches gives what a plain loop over model.generate
in dataset order gives, in dataset order."""
from __future__ import annotations

import logging

import pytest
import torch

from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.collate import Seq2SeqCollator
from textbox.decoding.detokenize import one_line
from textbox.evaluator.generate import generate_texts
from textbox.trainer.loop import Trainer
from tests.unit.decoding.conftest import SOURCES


@pytest.mark.parametrize("settings", [{}, {"num_beams": 3, "no_repeat_ngram_size": 2}])  # {}: the model's own
def test_sorted_batches_return_dataset_order(tiny_bart, tokenizer, tmp_path, settings):
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    config = Config({**DEFAULTS, "eval_batch_size": 4})
    trainer = Trainer(config, accelerator, tiny_bart, tokenizer, Seq2SeqCollator(tokenizer.pad_token_id), tmp_path,
                      logging.getLogger("test"))
    inputs = tokenizer(SOURCES)["input_ids"]
    loader = trainer.eval_loader([{"input_ids": ids, "labels": []} for ids in inputs])
    assert [batch["index"].tolist() for batch in loader] != [[0, 1, 2, 3], [4, 5]]  # really reordered
    settings = {**settings, "max_new_tokens": 10}
    texts = generate_texts(accelerator, tiny_bart, tokenizer, loader, settings, "test")

    expected = []
    with torch.no_grad():
        for ids in inputs:
            output = tiny_bart.generate(input_ids=torch.tensor([ids]), **settings)
            expected.append(one_line(tokenizer.decode(output[0], skip_special_tokens=True)))
    assert texts == expected
