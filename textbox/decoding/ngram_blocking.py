"""Repeated n-gram blocking that touches only the banned scores.

transformers 5's NoRepeatNGramLogitsProcessor is vectorised (no Python loop per hypothesis), but at every step it
builds a [hypotheses, vocabulary] mask and returns a masked copy of the scores: two full-size tensors per step.
On this CPU that took 0.5-1 ms per step for 128 hypotheses x 8,000 tokens when the machine was otherwise idle and
8 ms or more when other work kept it busy (fresh full-size tensors suffer most), next to 10-20 ms for a whole
beam-search step of the default model. ``InPlaceNoRepeatNGram`` finds the same banned (hypothesis, token) pairs the
same way and writes -inf into those entries only: 0.05 ms per step, outputs identical.

It runs after generate's own processors (transformers appends user processors), so it is used only where its
place in the list cannot matter: greedy or beam search without sampling, renormalisation or returned scores.
There the other processors only add -inf or force a token that blocking never bans (the end-of-sequence
token, or the first token, before any n-gram exists).
"""
from __future__ import annotations

from typing import Any

import torch
from transformers import LogitsProcessor, LogitsProcessorList

# Settings under which a processor's place in the list can change the result.
_ORDER_SENSITIVE = ("do_sample", "renormalize_logits", "return_dict_in_generate", "output_scores", "output_logits")


class InPlaceNoRepeatNGram(LogitsProcessor):
    """Bans every token that would complete an n-gram already in the hypothesis (as transformers does)."""

    def __init__(self, ngram_size: int):
        if ngram_size < 1:
            raise ValueError(f"ngram_size must be a positive integer, got {ngram_size}")
        self.ngram_size = ngram_size

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        length = input_ids.shape[-1]
        if length < self.ngram_size:
            return scores
        # The windows whose first n-1 tokens equal the last n-1 tokens ban their last token.
        prefix = input_ids[:, length + 1 - self.ngram_size:]
        windows = input_ids.unfold(dimension=1, size=self.ngram_size, step=1)
        hypotheses, positions = (windows[..., :-1] == prefix.unsqueeze(1)).all(dim=-1).nonzero(as_tuple=True)
        tokens = windows[hypotheses, positions, -1]
        in_vocabulary = tokens < scores.shape[-1]  # ids past the output layer cannot be generated anyway
        scores[hypotheses[in_vocabulary], tokens[in_vocabulary]] = -float("inf")
        return scores


def with_in_place_ngram_blocking(settings: dict[str, Any], generation_config: Any) -> dict[str, Any]:
    """``generate`` settings with the library's n-gram blocking replaced by InPlaceNoRepeatNGram where that gives
    identical outputs (see the module docstring); otherwise the settings unchanged."""
    size = settings.get("no_repeat_ngram_size", generation_config.no_repeat_ngram_size)
    if not size or any(settings.get(key, getattr(generation_config, key, None)) for key in _ORDER_SENSITIVE):
        return settings
    processors = LogitsProcessorList([*settings.get("logits_processor", []), InPlaceNoRepeatNGram(size)])
    return {**settings, "no_repeat_ngram_size": 0, "logits_processor": processors}
