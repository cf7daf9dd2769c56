"""Tiny chat models for the chat-template tests: a Qwen2 with a ChatML template and a Llama with a Llama-3 template,
1 layer, 32 wide, over a small byte-level BPE with the special tokens their templates write; saved with
save_pretrained as a hub checkpoint is (the template in the tokenizer's files)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from tokenizers import Tokenizer, processors
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from textbox.model.tokenizer import UNK, train_bpe_tokenizer

# Qwen2-Instruct's template (ChatML, a default system turn), as its tokenizer_config.json holds it.
CHATML_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
# Llama-3-Instruct's template: bos written by the template, headers, contents trimmed, <|eot_id|> ends a turn.
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")

STYLES = {
    "qwen2": {"template": CHATML_TEMPLATE, "special": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
              "bos": None, "eos": "<|im_end|>", "pad": "<|endoftext|>"},
    "llama3": {"template": LLAMA3_TEMPLATE,
               "special": ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
               "bos": "<|begin_of_text|>", "eos": "<|eot_id|>", "pad": None},
}
POSITIONS = 256


def chat_tokenizer(texts: Iterable[str], cache_dir: Path, style: str) -> PreTrainedTokenizerFast:
    """A byte-level BPE (~300 tokens) trained on ``texts`` with ``style``'s special tokens and chat template
    (llama3: every plain encoding starts with <|begin_of_text|>, as Llama 3's does)."""
    settings = STYLES[style]
    trained = train_bpe_tokenizer([*texts, "You are a helpful assistant.", "system user assistant"],
                                  vocab_size=300, min_frequency=1, cache_dir=cache_dir, log=lambda _: None)
    backend = Tokenizer.from_str(trained.backend_tokenizer.to_str())
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token=UNK)
    tokenizer.add_special_tokens({"additional_special_tokens": settings["special"]})
    tokenizer.eos_token = settings["eos"]
    if settings["bos"]:
        tokenizer.bos_token = settings["bos"]
        bos = tokenizer.convert_tokens_to_ids(settings["bos"])
        tokenizer.backend_tokenizer.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{settings['bos']} $A", pair=f"{settings['bos']} $A $B",
                                          special_tokens=[(settings["bos"], bos)])])
    if settings["pad"]:
        tokenizer.pad_token = settings["pad"]
    tokenizer.chat_template = settings["template"]
    return tokenizer


def tiny_chat_model(style: str, tokenizer: PreTrainedTokenizerFast, seed: int = 0):
    """A 1-layer, 32-wide Qwen2 or Llama over ``tokenizer``'s vocabulary."""
    import torch

    torch.manual_seed(seed)
    sizes = {"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
             "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": POSITIONS,
             "eos_token_id": tokenizer.eos_token_id, "bos_token_id": tokenizer.bos_token_id,
             "pad_token_id": tokenizer.pad_token_id}
    return Qwen2ForCausalLM(Qwen2Config(**sizes)) if style == "qwen2" else LlamaForCausalLM(LlamaConfig(**sizes))


def save_tiny_chat_model(path: Path, texts: Iterable[str], style: str, cache_dir: Path) -> Path:
    """A directory like an instruct checkpoint of ``style`` on the hub: config.json, weights, tokenizer files with
    the chat template."""
    tokenizer = chat_tokenizer(texts, cache_dir, style)
    tiny_chat_model(style, tokenizer).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
