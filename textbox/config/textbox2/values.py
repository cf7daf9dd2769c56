"""TextBox 2.0's spellings of our own keys' values and dict entries (the rest of its names: names.py).

Standard library only.
"""
from __future__ import annotations

from typing import Any, Callable

# Values of our own keys in TextBox 2.0's spelling: key -> {TextBox value: ours}.
# (A list's items are translated one by one.)
TEXTBOX_VALUES: dict[str, dict[Any, Any]] = {
    "pretrain_task": {"disabled": None},
    "scheduler": {"inverse": "inverse_sqrt"},
    # P-Tuning v2's deep prompts (a prefix at every layer) are peft's prefix tuning; Li & Liang's reparameterising
    # MLP is its prefix_projection, which TextBox's prefix_mid_dim turns on (TEXTBOX_ENTRIES).
    "efficient_methods": {"p-tuning-v2": "prefix-tuning"},
}

# Values of our own keys that TextBox 2.0 had and this framework has not: key -> {TextBox value: what to use}.
TEXTBOX_REFUSED_VALUES: dict[str, dict[Any, str]] = {
    "bleu_type": {
        "sacrebleu-romanian": "WMT16's Romanian normalisation script (and TextBox 2.0's sacrebleu_romanian path to "
                              "it) is not provided: give bleu_type='sacrebleu' (BLEU of the text as generated)",
        "fast-bleu": "fast-bleu (a per-sentence BLEU package) is not provided: give bleu_type='nltk' (sentence BLEU, "
                     "TextBox 2.0's default aggregation) or 'sacrebleu'",
    },
    "pretrain_task": {
        "unilm": "TextBox 2.0's UniLM pre-training (UniLM's masked-LM objectives for its UniLM model, whose code is "
                 "not in transformers) is not built here; pre-train an encoder-decoder with "
                 "--pretrain_task=denoising (BART's text infilling and sentence permutation)",
        "text_infilling": "TextBox 2.0's text infilling alone is --pretrain_task=denoising "
                          "--permute_sentence_ratio=0",
    },
}

# Entries of our dict keys in TextBox 2.0's spelling: key -> {TextBox entry: (our entries, given the value) or a
# refusal}. An entry named "@key" is one of our top-level keys (TextBox's scheduler_kwargs held the warm-up).
Entry = Callable[[Any], "dict[str, Any] | str"]
TEXTBOX_ENTRIES: dict[str, dict[str, Entry]] = {
    "efficient_kwargs": {
        "lora_r": lambda value: {"r": value},
        "prefix_length": lambda value: {"num_virtual_tokens": value},
        "prompt_length": lambda value: {"num_virtual_tokens": value},
        "prefix_mid_dim": lambda value: {"prefix_projection": True, "encoder_hidden_size": value},
        "prefix_dropout": lambda value: "peft's prefix tuning has no dropout on the prefix: drop prefix_dropout",
        "adapter_mid_dim": lambda value: "Houlsby adapters are not in peft (the library used here): drop "
                                         "adapter_mid_dim and choose another method, e.g. efficient_methods=['lora']",
    },
    "scheduler_kwargs": {  # TextBox 2.0's own schedules: linear warm-up from init_lr to max_lr over n_warmup_steps
        "n_warmup_steps": lambda value: {"@warmup_steps": value},
        "max_lr": lambda value: {"@learning_rate": value},
        "init_lr": lambda value: {} if value == 0 else "the warm-up here starts from 0 (transformers' schedules): "
                                                       "drop init_lr",
        "max_steps": lambda value: "the schedule here spans the run's optimiser steps (epochs, or --max_steps): "
                                   "drop max_steps from scheduler_kwargs",
    },
}
