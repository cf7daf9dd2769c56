"""A tiny untrained BART and a few sources of different lengths (so that batches are padded); tiny BART, GPT-2 and
Llama models trained for a few seconds to reverse words (their outputs end where they like)."""
from __future__ import annotations

import copy
import random

import pytest
import torch

from tests.helpers import _WORDS, tiny_bart_config

SOURCES = ["a dog reads a red book", "the cat", "my friend paints the small boat near the garden gate",
           "two apples", "an old man watches the teacher clean a wooden chair", "a child finds"]


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory):
    from textbox.model.tokenizer import train_bpe_tokenizer

    return train_bpe_tokenizer(SOURCES * 3, vocab_size=300, min_frequency=1,
                               cache_dir=tmp_path_factory.mktemp("cache"), log=lambda message: None)


@pytest.fixture(scope="session")
def tiny_bart(tokenizer):
    from transformers import BartForConditionalGeneration

    torch.manual_seed(0)
    return BartForConditionalGeneration(tiny_bart_config(tokenizer)).eval()


@pytest.fixture(scope="session")
def batch(tokenizer):
    return tokenizer(SOURCES, return_tensors="pt", padding=True)


@pytest.fixture(scope="session")
def pairs():
    """(source, target) pairs of the reverse-the-words task."""
    rng = random.Random(0)
    out = []
    for _ in range(200):
        words = rng.choices(_WORDS, k=rng.randint(2, 6))
        out.append((" ".join(words), " ".join(reversed(words))))
    return out


@pytest.fixture(scope="session")
def trained(pairs, tmp_path_factory):
    """(model, tokenizer): a d=32 BART with BART's conventions (decoder start = forced end = </s>), 150 steps."""
    from transformers import BartForConditionalGeneration

    from textbox.model.tokenizer import train_bpe_tokenizer

    tokenizer = train_bpe_tokenizer([source for source, _ in pairs], vocab_size=300, min_frequency=1,
                                    cache_dir=tmp_path_factory.mktemp("tok"), log=lambda message: None)
    torch.manual_seed(0)
    model = BartForConditionalGeneration(tiny_bart_config(tokenizer, dropout=0.0))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(150):
        batch = pairs[(step * 16) % 200:(step * 16) % 200 + 16]
        inputs = tokenizer([source for source, _ in batch], return_tensors="pt", padding=True)
        labels = tokenizer([target for _, target in batch], return_tensors="pt", padding=True)["input_ids"]
        labels[labels == tokenizer.pad_token_id] = -100
        model(**inputs, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.eval(), tokenizer


@pytest.fixture(scope="session")
def train_causal(pairs, tmp_path_factory):
    """style -> (model, tokenizer): a tiny GPT-2 or Llama trained 300 steps on the same task as the framework
    trains it, trained on first use."""
    from tests.causal_helpers import train_tiny_causal_lm

    cache: dict[str, tuple] = {}

    def trained_style(style: str) -> tuple:
        if style not in cache:
            cache[style] = train_tiny_causal_lm(style, pairs, tmp_path_factory.mktemp(f"tok-{style}"))
        return cache[style]
    return trained_style


@pytest.fixture(params=["gpt2", "llama"])
def trained_causal(request, train_causal):
    return train_causal(request.param)


@pytest.fixture(params=["bart", "gpt2", "llama"])
def trained_any(request, trained, train_causal):
    """(a copy of the model, tokenizer): the trained BART, GPT-2 or Llama."""
    model, tokenizer = trained if request.param == "bart" else train_causal(request.param)
    return copy.deepcopy(model), tokenizer
