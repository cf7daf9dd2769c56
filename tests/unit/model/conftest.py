"""Tiny shared pieces for the model tests: a synthetic corpus, a trained tokenizer, small saved models."""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Callable

import pytest
import torch

from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.split import Split

TINY_BART = {"d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2,
             "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64}
TINY_VOCAB = 300

_SUBJECTS = ["a dog", "the cat", "my friend", "a child", "the teacher", "an old man"]
_VERBS = ["reads", "paints", "finds", "carries", "watches", "cleans"]
_OBJECTS = ["a red book", "the small boat", "two apples", "a wooden chair", "the garden gate", "some café menus"]


def _tiny_config(cache_dir: Path, **changes) -> Config:
    values = {**DEFAULTS, "cache_dir": str(cache_dir), "config_kwargs": TINY_BART,
              "tokenizer_kwargs": {"vocab_size": TINY_VOCAB}, "src_len": 24, "tgt_len": 8}
    return Config({**values, **changes})


@pytest.fixture
def tiny_config(tmp_path) -> Callable[..., Config]:
    """Builds a Config for a tiny model, caching under this test's tmp_path; keyword arguments override keys."""
    return lambda **changes: _tiny_config(tmp_path / "cache", **changes)


@pytest.fixture(scope="session")
def train_split() -> Split:
    """216 sentences (targets) with their long words as sources: CommonGen-like, made up here."""
    sentences = [f"{s} {v} {o}." for s, v, o in itertools.product(_SUBJECTS, _VERBS, _OBJECTS)]
    sources = [" ".join(word for word in sentence.rstrip(".").split() if len(word) > 3) for sentence in sentences]
    return Split("train", sources, [[sentence] for sentence in sentences])


@pytest.fixture(scope="session")
def corpus(train_split) -> list[str]:
    return [*train_split.sources, *(references[0] for references in train_split.targets)]


@pytest.fixture(scope="session")
def tiny_transformer(tmp_path_factory, train_split):
    """(model, tokenizer) of the from-scratch builder, shared because training the tokenizer takes time."""
    from textbox.model import transformer

    built = transformer.build(_tiny_config(tmp_path_factory.mktemp("cache")), train_split)
    return built.model, built.tokenizer


@pytest.fixture(scope="session")
def saved_bart(tmp_path_factory, tiny_transformer) -> Path:
    """A directory as a run's checkpoint_best holds it: model and tokenizer side by side."""
    model, tokenizer = tiny_transformer
    path = tmp_path_factory.mktemp("bart")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def greedy() -> Callable[..., torch.Tensor]:
    """greedy(model, tokenizer): token ids for two sources, forced to full length so that an untrained
    model's output is more than a lone </s> and a reload that changed anything would show."""

    def generate(model, tokenizer) -> torch.Tensor:
        model.eval()
        batch = tokenizer(["friend paints small boat", "teacher watches garden gate"], return_tensors="pt",
                          padding=True)
        with torch.no_grad():
            return model.generate(**batch, do_sample=False, num_beams=1,
                                  min_new_tokens=model.generation_config.max_new_tokens)

    return generate
