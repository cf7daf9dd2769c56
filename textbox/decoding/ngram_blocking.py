"""Repeated n-gram blocking that touches only the banned scores.

transformers 5's NoRepeatNGramLogitsProcessor is vectorised (no Python loop per hypothesis), but at every step it
builds a [hypotheses, vocabulary] mask and returns a masked copy of the scores: two full-size tensors per step, a
sizeable part of a whole beam-search step on a CPU, more so when other work keeps the machine busy (fresh full-size
tensors suffer most). ``InPlaceNoRepeatNGram`` finds the same banned (hypothesis, token) pairs the same way and
writes -inf into those entries only: a small fraction of the time, outputs identical (the figures:
docs/speedups.md, "Figures behind the code's choices").

It must act exactly where transformers puts its own processor: processors that come after it in generate's list
(forced end-of-sequence at the last step, forced first token, ...) may re-allow a token it bans, and running it
after them instead bans, e.g., BART's forced end-of-sequence token once it has appeared (``no_repeat_ngram_size=1``)
and changes beam search's outputs. So generate builds its list as usual, and the decoding loop it runs gets that
list with transformers' NoRepeatNGramLogitsProcessor swapped, at its own index, for InPlaceNoRepeatNGram: through
``custom_generate``, generate's documented hook for a decoding loop that receives the prepared processors.

One difference from transformers, on purpose: a decoder-only model's left padding is no part of the n-grams.
transformers' processor reads the padded prompt, pad tokens included (a pad token, often the end token, makes
n-grams with the prompt's first tokens and with each other), so an example's output depended on the longest prompt
in its batch: a tiny trained GPT-2, greedy, no_repeat_ngram_size=2, gave 4 of 60 outputs that changed between
batches of 16 and of 1 (size 3: 3 of 60). Without the padding every output equals ``model.generate`` on the example
alone, whatever the batch (tests/unit/decoding/test_ngram_blocking.py).
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Mapping

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList, NoRepeatNGramLogitsProcessor
from transformers.distributed.fsdp import is_fsdp_managed_module
from transformers.generation.utils import GENERATION_MODES_MAPPING
from transformers.integrations.deepspeed import is_deepspeed_zero3_enabled

if TYPE_CHECKING:
    from transformers import PreTrainedModel, StoppingCriteriaList
    from transformers.generation.utils import GenerateOutput

# Modes whose loop (transformers' _sample / _beam_search) applies the processor list once per step to a fresh
# tensor; the swap is made for these only.
_SWAPPED_MODES = ("greedy_search", "sample", "beam_search", "beam_sample")


class InPlaceNoRepeatNGram(LogitsProcessor):
    """Bans every token that would complete an n-gram already in the hypothesis (as transformers does), the
    left padding of a decoder-only prompt excluded: ``starts[row]`` is where row's own tokens begin."""

    def __init__(self, ngram_size: int, starts: torch.Tensor | None = None):
        if ngram_size < 1:
            raise ValueError(f"ngram_size must be a positive integer, got {ngram_size}")
        self.ngram_size = ngram_size
        self.starts = starts

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        length = input_ids.shape[-1]
        if length < self.ngram_size:
            return scores
        # The windows whose first n-1 tokens equal the last n-1 tokens ban their last token.
        prefix = input_ids[:, length + 1 - self.ngram_size:]
        windows = input_ids.unfold(dimension=1, size=self.ngram_size, step=1)
        matches = (windows[..., :-1] == prefix.unsqueeze(1)).all(dim=-1)
        if self.starts is not None:  # only windows within the row's own tokens count (then so is the prefix)
            window_starts = torch.arange(windows.shape[1], device=input_ids.device).unsqueeze(0)
            matches &= window_starts >= self.starts.to(input_ids.device).unsqueeze(1)
        hypotheses, positions = matches.nonzero(as_tuple=True)
        tokens = windows[hypotheses, positions, -1]
        in_vocabulary = tokens < scores.shape[-1]  # ids past the output layer cannot be generated anyway
        scores[hypotheses[in_vocabulary], tokens[in_vocabulary]] = -float("inf")
        return scores


def with_in_place_ngram_blocking(settings: Mapping[str, object], generation_config: GenerationConfig | None
                                 ) -> Mapping[str, object]:
    """``generate`` settings under which the library's n-gram blocking is replaced, in its place, by
    InPlaceNoRepeatNGram; the settings unchanged where nothing is blocked or the decoding mode is another one."""
    merged = copy.deepcopy(generation_config) if generation_config is not None else GenerationConfig()
    for key, value in settings.items():  # as generate merges them, without validating (generate does that)
        if hasattr(merged, key):
            setattr(merged, key, value)
    if not merged.no_repeat_ngram_size or "custom_generate" in settings or merged.stop_strings is not None:
        return settings  # (a custom_generate callable would not receive the tokenizer stop_strings need)
    if merged.get_generation_mode().value not in _SWAPPED_MODES:
        return settings
    return {**settings, "custom_generate": decode_with_in_place_ngram_blocking}


def decode_with_in_place_ngram_blocking(model: PreTrainedModel, input_ids: torch.LongTensor,
                                        logits_processor: LogitsProcessorList,
                                        stopping_criteria: StoppingCriteriaList, generation_config: GenerationConfig,
                                        **model_kwargs: Any) -> GenerateOutput | torch.LongTensor:
    """The decoding loop generate would run, with its own processor list except that each
    NoRepeatNGramLogitsProcessor is an InPlaceNoRepeatNGram at the same index. When raw logits are returned
    (``output_logits``) the scores tensor is kept by generate, so nothing is written in place."""
    if not generation_config.output_logits:
        starts = _prompt_starts(model, model_kwargs.get("attention_mask"))
        logits_processor = LogitsProcessorList(
            InPlaceNoRepeatNGram(processor.ngram_size, starts) if type(processor) is NoRepeatNGramLogitsProcessor
            else processor for processor in logits_processor)
    method = getattr(type(model), GENERATION_MODES_MAPPING[generation_config.get_generation_mode()])
    # generate computes synced_gpus itself but does not hand it to a custom loop: the same rule as generate's.
    synced_gpus = (is_deepspeed_zero3_enabled() or is_fsdp_managed_module(model)) and \
        torch.distributed.is_available() and torch.distributed.is_initialized() and \
        torch.distributed.get_world_size() > 1
    return method(model, input_ids, logits_processor=logits_processor, stopping_criteria=stopping_criteria,
                  generation_config=generation_config, synced_gpus=synced_gpus, **model_kwargs)


def _prompt_starts(model: PreTrainedModel, attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """Per row of a decoder-only batch, the first column of its own tokens (the prompts are left-padded, and the
    rows of one example under beam search or several samples share its padding); None for an encoder-decoder,
    whose decoder input is never padded."""
    if model.config.is_encoder_decoder or attention_mask is None:
        return None
    return attention_mask.long().argmax(dim=1)
