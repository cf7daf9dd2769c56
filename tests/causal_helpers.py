"""Tiny decoder-only models and tokenizers for the causal-LM tests, built offline in temporary directories.

The tokenizers are trained with the project's own BPE trainer, then given the special-token habits of the real
ones: GPT-2 style adds no special tokens and has no padding token; Llama style starts every text with <s> and
has no padding token either. Both make the builder fall back to eos for padding.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from tokenizers import Tokenizer, processors
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from textbox.model.tokenizer import BOS, EOS, UNK, train_bpe_tokenizer

POSITIONS = 64


def causal_tokenizer(texts: Iterable[str], cache_dir: Path, style: str) -> PreTrainedTokenizerFast:
    """A byte-level BPE (~300 tokens) trained on ``texts``; ``style`` is "gpt2" or "llama" (see module doc)."""
    trained = train_bpe_tokenizer(texts, vocab_size=300, min_frequency=1, cache_dir=cache_dir, log=lambda _: None)
    backend = Tokenizer.from_str(trained.backend_tokenizer.to_str())
    if style == "gpt2":
        backend.post_processor = processors.ByteLevel(trim_offsets=False)
    elif style == "llama":
        bos = backend.token_to_id(BOS)
        backend.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B",
                                                               special_tokens=[(BOS, bos)])
    else:
        raise ValueError(style)
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, eos_token=EOS, unk_token=UNK)


def tiny_model(style: str, tokenizer: PreTrainedTokenizerFast, seed: int = 0):
    """A 2-layer, 32-wide GPT-2 or Llama over ``tokenizer``'s vocabulary, no dropout (deterministic tests)."""
    import torch

    torch.manual_seed(seed)
    ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id}
    if style == "gpt2":
        config = GPT2Config(vocab_size=len(tokenizer), n_positions=POSITIONS, n_embd=32, n_layer=2, n_head=2,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **ids)
        return GPT2LMHeadModel(config)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=POSITIONS, **ids)
    return LlamaForCausalLM(config)


def save_tiny_causal_lm(path: Path, texts: Iterable[str], style: str, cache_dir: Path) -> Path:
    """A directory like a hub checkpoint of ``style``: config.json, weights and tokenizer files."""
    tokenizer = causal_tokenizer(texts, cache_dir, style)
    tiny_model(style, tokenizer).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def train_tiny_causal_lm(style: str, pairs: list[tuple[str, str]], cache_dir: Path, steps: int = 300):
    """(model, tokenizer): a tiny ``style`` LM trained on (source, target) pairs as the framework trains it
    (textbox.data.collate: ``source eos target eos``, the loss on the target), a few seconds on a CPU. Its outputs
    end where they like, unlike a random model's, which run to the length bound."""
    import torch

    from textbox.data.collate import CausalLMCollator

    tokenizer = causal_tokenizer([text for pair in pairs for text in pair], cache_dir, style)
    tokenizer.pad_token = tokenizer.eos_token  # as the builder does for tokenizers without one
    model = tiny_model(style, tokenizer)
    model.config.pad_token_id = model.generation_config.pad_token_id = tokenizer.pad_token_id
    collate = CausalLMCollator(tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(steps):
        batch = [pairs[(step * 16 + offset) % len(pairs)] for offset in range(16)]
        examples = [{"input_ids": tokenizer(source)["input_ids"],
                     "labels": [*tokenizer(target, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]}
                    for source, target in batch]
        joined = collate(examples)
        model(input_ids=joined["input_ids"], attention_mask=joined["attention_mask"],
              labels=joined["labels"]).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.eval(), tokenizer
