"""The Evaluator on a model it is given: validation by loss generates nothing; validation and test by a metric
generate through the run's decoding engine and score what generate_sequences gives; pre-training is tested by its loss
alone; the model's train/eval mode is left as found."""
from __future__ import annotations

import math

import pytest
import torch

from textbox.config.loader import Config
from textbox.data.collate import Seq2SeqCollator
from textbox.evaluator.eval_report import EvalSet
from textbox.evaluator.evaluator import Evaluator
from textbox.decoding.generate import generate_sequences
from textbox.evaluator.metrics import compute_metrics
from tests.helpers import tiny_bart_config
from tests.unit.trainer.tiny import TINY_BART, reverse_words_split, trainer_config


@pytest.fixture(scope="module")
def tokenizer(tiny_tokenizer):
    """The tiny tokenizer (tests/conftest.py), under the name these tests use."""
    return tiny_tokenizer


@pytest.fixture(scope="module")
def model(tokenizer):
    from transformers import BartForConditionalGeneration

    torch.manual_seed(0)
    return BartForConditionalGeneration(tiny_bart_config(tokenizer, **TINY_BART))


@pytest.fixture
def valid(tokenizer) -> EvalSet:
    split = reverse_words_split(6, seed=2)
    sources = tokenizer(split.sources)["input_ids"]
    targets = tokenizer([references[0] for references in split.targets])["input_ids"]
    return EvalSet([{"input_ids": s, "labels": t} for s, t in zip(sources, targets)], split)


def evaluator_for(tokenizer, cache_dir, **changes) -> Evaluator:
    from accelerate import Accelerator

    config: Config = trainer_config(**{"generation_kwargs": {"max_new_tokens": 5}, "cache_dir": str(cache_dir),
                                       **changes})
    return Evaluator(config, Accelerator(cpu=True), tokenizer, Seq2SeqCollator(tokenizer.pad_token_id))


def test_validation_by_loss_generates_nothing_and_leaves_the_mode_alone(tokenizer, model, valid,
                                                                        tmp_path, fresh_accelerate_state, monkeypatch):
    evaluator = evaluator_for(tokenizer, tmp_path, metrics_for_best_model=["loss", "perplexity"])
    monkeypatch.setattr(evaluator, "generate", lambda *args: pytest.fail("validation by loss generated"))
    model.train()
    report = evaluator.validate(model, valid)
    assert model.training
    assert set(report.figures) == {"loss", "perplexity"} and report.figures["loss"] > 0
    assert report.figures["perplexity"] == pytest.approx(math.exp(report.figures["loss"]))
    assert report.sequences is None and report.details is None and report.texts is None
    assert evaluator.validate(model, valid).figures == report.figures  # the split's loader is kept and reused


def test_validation_by_a_metric_scores_the_generated_texts(tokenizer, model, valid, tmp_path, fresh_accelerate_state):
    evaluator = evaluator_for(tokenizer, tmp_path, metrics=["bleu", "rouge"],
                              metrics_for_best_model=["bleu"])
    model.eval()
    report = evaluator.validate(model, valid)
    assert not model.training
    expected = generate_sequences(evaluator.accelerator, model, tokenizer, evaluator.loader(valid.data),
                                  evaluator.generation, "reference", evaluator.decoding)
    assert report.sequences == expected and report.texts == [texts[0] for texts in expected]
    metrics = compute_metrics(["bleu", "rouge"], report.texts, valid.split.targets, sources=valid.split.sources,
                              options=evaluator.config, loss=report.figures["loss"])
    assert report.figures == {"loss": report.figures["loss"], **metrics.scores}
    assert report.details == metrics.details and "bleu" in report.details


def test_test_pass_generates_every_sequence_and_pretraining_only_its_loss(tokenizer, model, valid,
                                                                          tmp_path, fresh_accelerate_state):
    evaluator = evaluator_for(tokenizer, tmp_path, metrics=["bleu"],
                              generation_kwargs={"max_new_tokens": 5, "num_beams": 2, "num_return_sequences": 2})
    report = evaluator.test(model, valid)
    assert len(report.sequences) == len(valid.split) and all(len(texts) == 2 for texts in report.sequences)
    assert set(report.figures) == {"loss", "bleu", "bleu-1", "bleu-2", "bleu-3", "bleu-4"}

    pretraining = evaluator_for(tokenizer, tmp_path, pretrain_task="denoising")
    report = pretraining.test(model, EvalSet(valid.data, valid.split))
    assert set(report.figures) == {"loss"} and report.sequences == [] and report.details is None
