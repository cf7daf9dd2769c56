"""Evaluation over Evaluator.loader's length-sorted batches: generations in dataset order, as a plain loop
over model.generate gives them; filler examples (which even out batches across processes) change nothing."""
from __future__ import annotations


import pytest
import torch

from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.collate import Seq2SeqCollator
from textbox.decoding.detokenize import one_line
from textbox.decoding.generate import generate_sequences, generate_texts, write_generations
from textbox.evaluator.evaluator import Evaluator
from tests.unit.decoding.conftest import SOURCES


def _evaluator(tokenizer) -> Evaluator:
    from accelerate import Accelerator

    config = Config({**DEFAULTS, "eval_batch_size": 4})
    return Evaluator(config, Accelerator(cpu=True), tokenizer, Seq2SeqCollator(tokenizer.pad_token_id))


@pytest.mark.parametrize("settings", [{}, {"num_beams": 3, "no_repeat_ngram_size": 2}])  # {}: the model's own
def test_sorted_batches_return_dataset_order(tiny_bart, tokenizer, tmp_path, settings):
    evaluator = _evaluator(tokenizer)
    accelerator = evaluator.accelerator
    inputs = tokenizer(SOURCES)["input_ids"]
    loader = evaluator.loader([{"input_ids": ids, "labels": []} for ids in inputs])
    assert [batch["index"].tolist() for batch in loader] != [[0, 1, 2, 3], [4, 5]]  # really reordered
    settings = {**settings, "max_new_tokens": 10}
    texts = generate_texts(accelerator, tiny_bart, tokenizer, loader, settings, "test")

    expected = []
    with torch.no_grad():
        for ids in inputs:
            output = tiny_bart.generate(input_ids=torch.tensor([ids]), **settings)
            expected.append(one_line(tokenizer.decode(output[0], skip_special_tokens=True)))
    assert texts == expected


@pytest.mark.parametrize("settings", [{"num_beams": 3, "num_return_sequences": 3},
                                      {"num_beams": 4, "num_return_sequences": 2, "no_repeat_ngram_size": 2}])
def test_every_returned_sequence_stays_with_its_example(tiny_bart, tokenizer, tmp_path, settings):
    """k rows per example come back as that example's k texts, in generate's order (best first); the top one is
    what generate_texts returns. It used to zip n*k rows with n indices."""
    evaluator = _evaluator(tokenizer)
    inputs = tokenizer(SOURCES)["input_ids"]
    loader = evaluator.loader([{"input_ids": ids, "labels": []} for ids in inputs])
    settings = {**settings, "max_new_tokens": 8}
    sequences = generate_sequences(evaluator.accelerator, tiny_bart, tokenizer, loader, settings, "test")

    expected = []
    with torch.no_grad():
        for ids in inputs:
            output = tiny_bart.generate(input_ids=torch.tensor([ids]), **settings)
            expected.append([one_line(text) for text in tokenizer.batch_decode(output, skip_special_tokens=True)])
    assert all(len(texts) == settings["num_return_sequences"] for texts in expected)
    assert sequences == expected
    assert generate_texts(evaluator.accelerator, tiny_bart, tokenizer, loader, settings, "test") == \
        [texts[0] for texts in expected]


def test_generation_files_one_line_per_example_and_k_lines_per_example(tmp_path):
    sequences = [["a1", "a2"], ["b1", "b2"], ["c1", "c2"]]
    assert write_generations(tmp_path / "generation.txt", sequences) == tmp_path / "generation_all.txt"
    assert (tmp_path / "generation.txt").read_text() == "a1\nb1\nc1\n"
    assert (tmp_path / "generation_all.txt").read_text() == "a1\na2\nb1\nb2\nc1\nc2\n"
    assert write_generations(tmp_path / "single.txt", [["a"], ["b"]]) is None
    assert (tmp_path / "single.txt").read_text() == "a\nb\n" and not (tmp_path / "single_all.txt").exists()


def test_fillers_add_nothing_to_the_loss_nor_to_the_texts(tiny_bart, tokenizer, tmp_path):
    """Batches built for 2 processes (fillers included) but run by one: same loss, same texts."""
    from torch.utils.data import DataLoader

    from textbox.data.batching import EvalExamples, LengthSortedBatchSampler, column_lengths

    evaluator = _evaluator(tokenizer)
    encoded = tokenizer(SOURCES)["input_ids"]
    data = [{"input_ids": ids, "labels": ids[::-1]} for ids in encoded]
    lengths = column_lengths(data, "input_ids"), column_lengths(data, "labels")
    for_two = LengthSortedBatchSampler(*lengths, batch_size=5, num_processes=2)  # [5, 1 + 4 fillers]
    assert max(_flat(for_two)) >= len(data)  # some fillers
    with_fillers = evaluator.accelerator.prepare(DataLoader(EvalExamples(data), batch_sampler=for_two,
                                                          collate_fn=evaluator.collator))
    plain = evaluator.loader(data)
    assert evaluator.loss(tiny_bart, with_fillers) == pytest.approx(evaluator.loss(tiny_bart, plain), rel=1e-6)
    settings = {"max_new_tokens": 6}
    assert generate_texts(evaluator.accelerator, tiny_bart, tokenizer, with_fillers, settings, "fillers") == \
        generate_texts(evaluator.accelerator, tiny_bart, tokenizer, plain, settings, "plain")


def _flat(batches) -> list[int]:
    return [index for batch in batches for index in batch]
