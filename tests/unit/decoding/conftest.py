"""A tiny untrained BART and a few sources of different lengths (so that batches are padded)."""
from __future__ import annotations

import pytest
import torch

SOURCES = ["a dog reads a red book", "the cat", "my friend paints the small boat near the garden gate",
           "two apples", "an old man watches the teacher clean a wooden chair", "a child finds"]


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory):
    from textbox.model.tokenizer import train_bpe_tokenizer

    return train_bpe_tokenizer(SOURCES * 3, vocab_size=300, min_frequency=1,
                               cache_dir=tmp_path_factory.mktemp("cache"), log=lambda message: None)


@pytest.fixture(scope="session")
def tiny_bart(tokenizer):
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    config = BartConfig(vocab_size=len(tokenizer), d_model=32, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                        max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                        forced_eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.eos_token_id)
    return BartForConditionalGeneration(config).eval()


@pytest.fixture(scope="session")
def batch(tokenizer):
    return tokenizer(SOURCES, return_tensors="pt", padding=True)
