"""transformers generation settings -> CTranslate2 ``translate_batch``/``generate_batch`` arguments.

Every setting either maps to an argument that decodes alike (checked against ``model.generate`` in
tests/unit/decoding/, on encoder-decoder and decoder-only models; benchmarks/engine_agreement.py measures every
mapped setting, docs/speedups.md has its tables) or is named by ``unsupported_settings``: the run then decodes
with transformers (``--decoding_backend=auto``) or is refused (``ctranslate2``). Nothing is dropped silently.

How lengths are counted (measured against transformers 5):
- transformers' ``max_new_tokens`` counts the end token; CTranslate2's ``max_decoding_length`` counts it too.
  ``max_length`` and ``min_length`` also count the decoder's input: the decoder start token of an encoder-decoder,
  a decoder-only model's left-padded prompt (textbox.decoding.lengths), so a decoder-only call is made per batch.
- CTranslate2 cuts a source after ``max_input_length`` tokens (1024 by default); transformers never does, so the
  limit is lifted (0).
- ``forced_eos_token_id`` (BART's convention) makes the last allowed step the end token; CTranslate2 has no
  forcing, so the bound is one less and a hypothesis cut there is the same tokens without the end token.
  Beam search then ranks a hypothesis cut there by its length with the end token, as transformers does
  (``rerank_cut_hypotheses``).
- Beam search keeps the end token in the hypotheses (``return_end_token``): transformers normalises a score by
  the length with the end token, CTranslate2 by the length of what it returns.
- ``min_new_tokens`` = CTranslate2's ``min_decoding_length``; 0 allows an immediate end token as transformers
  does (CTranslate2's 1 forbids it). ``min_length`` counts the decoder start token. A minimum length with beams
  is not mapped: CTranslate2 bans the end token before its log-softmax (the other tokens' scores are
  renormalised), transformers after, so the beams rank differently. Greedy decoding and sampling take the same
  tokens either way.

When beam search stops (``early_stopping``), read in both sources (transformers' ``_beam_search``, CTranslate2's
``BeamSearch::search``): both keep the same beams at every step (the best num_beams of 2 x num_beams candidates
that do not end; a candidate among the best num_beams that ends is a finished hypothesis), so the searches
differ only in when they stop.
- CTranslate2 stops once ``round(beam_size * patience)`` hypotheses have ended, or (length_penalty 0 only) once
  its best beam has ended.
- ``early_stopping=True``: stop once num_beams hypotheses have ended = CTranslate2's patience 1. Under a forced
  end token a search that stopped there never reaches the forced step, so the hypotheses cut at the bound are
  then no candidates (``_complete_cut_searches`` in ctranslate2_calls.py counts them).
- ``early_stopping='never'``: stop once no running beam can beat the worst of the num_beams best finished,
  counting the longest length it could reach: an exact bound, so it finds what running to the length bound
  finds = CTranslate2 with patience = the length bound (it never stops early).
- ``early_stopping=False`` (transformers' default; ``None`` in transformers 5 means the same): the same bound
  computed at the current length. With length_penalty <= 0 that bound is exact ('never' again); with a positive
  penalty it is a heuristic that stops somewhere between True and 'never' and that CTranslate2 has no equal for:
  it needs the best running beam's score at every step, which CTranslate2 does not return.
Decision for that default: when the user leaves ``early_stopping`` unset, CTranslate2 runs the early_stopping=True
search and the engine's log line says so (``stopping_note``); an explicit ``early_stopping=False`` falls back to
transformers (auto) or is refused (ctranslate2). Why: the default is what nearly every beam search uses, and
falling back for it would give up the 5x of CTranslate2 for a heuristic nobody chose; True is the cheapest exact
stopping rule both engines share (docs/speedups.md, beam search stopping: neither True nor 'never' reproduces the
heuristic, and 'never' is 2.3x slower), and a user who needs one search on both engines sets early_stopping=True or
'never' (identical outputs, tested).
Not mapped, because measured not to decode alike (figures: docs/speedups.md):
- ``repetition_penalty``: transformers also penalises the decoder start token (BART's end token) or the whole
  prompt, CTranslate2 neither;
- ``no_repeat_ngram_size`` with beams: CTranslate2 bans before normalising the scores, transformers after (greedy
  encoder-decoder decoding maps); on a decoder-only model at all: transformers bans the prompt's n-grams too,
  CTranslate2 only those of what it decodes step by step (with ``include_prompt_in_result=True`` every prompt
  token but the first, with its length bounds then counting each prompt: exact only one call per example);
- ``forced_bos_token_id`` with beams: at the first step after a forced token CTranslate2 replaces an end token
  proposed by any beam but the best by a dead hypothesis (``update_sample_with_prefix`` in its decoding.cc, not
  configurable), where transformers counts "forced token, end" as a finished hypothesis and keeps num_beams live
  beams. Greedy decoding and sampling keep one hypothesis and map.
Sampling maps to the same distribution (CTranslate2 applies top_k, temperature, then top_p, as transformers does),
with transformers' default top_k of 50 when it is unset, but draws from another random generator: outputs agree
only where the distribution leaves one choice.
Nothing heavy is imported at module level: config validation calls ``unsupported_settings`` with no model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from transformers import GenerationConfig

from textbox.decoding.generation_config import effective_config
from textbox.decoding.lengths import new_token_bounds

# Settings that change nothing in the output or are handled below.
_MAPPED = {"max_new_tokens", "max_length", "min_new_tokens", "min_length", "num_beams", "length_penalty",
           "no_repeat_ngram_size", "repetition_penalty", "do_sample", "top_k", "top_p", "temperature",
           "num_return_sequences", "early_stopping", "forced_bos_token_id", "forced_eos_token_id",
           "decoder_start_token_id", "bos_token_id", "eos_token_id", "pad_token_id", "use_cache"}
# What generate uses for a field nobody set (GenerationConfig's fields default to None).
_GENERATE_DEFAULTS = {"top_k": 50}
# Fields of a GenerationConfig that never change what is generated.
_BOOKKEEPING = {"transformers_version", "_from_model_config", "return_dict_in_generate", "output_scores",
                "output_logits", "output_attentions", "output_hidden_states", "is_assistant"}


def unsupported_settings(settings: Mapping[str, object], generation_config: GenerationConfig | None = None,
                         decoder_start: int | None = None, decoder_only: bool | None = None) -> list[str]:
    """What in ``settings`` (over the model's ``generation_config``, when given) CTranslate2 cannot do alike;
    ``decoder_only``: whether the model is a decoder-only LM (None: not known yet, at config time)."""
    problems = [f"{name}={settings[name]!r} has no CTranslate2 equal" for name in sorted(settings)
                if name not in _MAPPED and name not in _BOOKKEEPING]
    merged: dict[str, Any] = dict(settings)  # generate's keyword arguments: each of its own type
    if generation_config is not None:
        effective = effective_config(generation_config, {k: v for k, v in settings.items() if k in _MAPPED})
        merged = effective.to_diff_dict()
        problems.extend(f"the model's generation_config sets {name}={merged[name]!r}, which has no CTranslate2 "
                        f"equal" for name in sorted(merged)
                        if name not in _MAPPED and name not in _BOOKKEEPING and name not in settings)
        merged = {name: getattr(effective, name) for name in _MAPPED}
    beams = merged.get("num_beams") or 1
    if (merged.get("repetition_penalty") or 1.0) != 1.0:
        also = ("the prompt's tokens, CTranslate2 only those it decodes step by step" if decoder_only else
                "the decoder start token, CTranslate2 does not")
        problems.append(f"repetition_penalty={merged['repetition_penalty']!r}: transformers also penalises {also}, "
                        f"so outputs differ")
    if (merged.get("no_repeat_ngram_size") or 0) > 0 and beams > 1 and not merged.get("do_sample"):
        problems.append(f"no_repeat_ngram_size={merged['no_repeat_ngram_size']} with num_beams={beams}: CTranslate2 "
                        f"bans n-grams before normalising the scores, transformers after, so beams rank differently "
                        f"(greedy decoding maps)")
    if (merged.get("no_repeat_ngram_size") or 0) > 0 and decoder_only:
        problems.append(f"no_repeat_ngram_size={merged['no_repeat_ngram_size']} on a decoder-only model: "
                        f"transformers bans the n-grams of the prompt too, CTranslate2 only those it decodes step "
                        f"by step (the output and part of the prompt), so outputs differ")
    elif merged.get("no_repeat_ngram_size") == 1:
        problems.append("no_repeat_ngram_size=1: transformers counts the decoder start token (BART's end token) "
                        "as generated and never ends, CTranslate2 does not")
    forced_bos = merged.get("forced_bos_token_id")
    if forced_bos is not None and decoder_only:
        problems.append(f"forced_bos_token_id={forced_bos} on a decoder-only model: transformers forces it only "
                        f"where the prompt is one token wide")
    elif forced_bos is not None and beams > 1 and not merged.get("do_sample"):
        problems.append(f"forced_bos_token_id={forced_bos} with num_beams={beams}: CTranslate2 never lets a beam "
                        f"other than the best end right after a forced token, transformers does, so beams differ "
                        f"(greedy decoding and sampling map)")
    if merged.get("do_sample") and beams > 1:
        problems.append(f"do_sample=True with num_beams={beams} (beam sampling) has no CTranslate2 equal")
    if beams > 1 and not merged.get("do_sample"):
        problems.extend(_beam_search_problems(merged, settings, beams))
    eos, forced_eos = merged.get("eos_token_id"), merged.get("forced_eos_token_id")
    if forced_eos is not None and eos is not None and forced_eos not in _as_list(eos):
        problems.append(f"forced_eos_token_id={forced_eos} is not the end token {eos}")
    start = merged.get("decoder_start_token_id")
    if generation_config is not None and decoder_start is not None and start is not None and start != decoder_start:
        problems.append(f"decoder_start_token_id={start} differs from the model config's {decoder_start}, which "
                        f"the converted model starts with")
    return problems


def _beam_search_problems(merged: dict[str, Any], settings: Mapping[str, object], beams: int) -> list[str]:
    """Beam-search settings whose search CTranslate2 cannot reproduce (see the module docstring)."""
    problems = []
    penalty = merged.get("length_penalty")
    penalty = 1.0 if penalty is None else penalty
    stopping = merged.get("early_stopping")
    if (merged.get("min_new_tokens") or 0) > 0 or (merged.get("min_length") or 0) > 1:
        problems.append(f"a minimum length with num_beams={beams}: CTranslate2 bans the end token before "
                        f"normalising the scores, transformers after, so beams rank differently (greedy decoding "
                        f"and sampling map)")
    if penalty == 0 and stopping is True:
        problems.append("early_stopping=True with length_penalty=0: CTranslate2 then stops once its best beam has "
                        "ended, not once num_beams hypotheses have ended")
    if penalty == 0 and (merged.get("num_return_sequences") or 1) > 1:
        problems.append(f"num_return_sequences={merged['num_return_sequences']} with length_penalty=0: CTranslate2 "
                        f"stops once its best beam has ended, which settles the best hypothesis but not the next ones")
    if penalty > 0 and settings.get("early_stopping") is False:
        problems.append(f"early_stopping=False with length_penalty={penalty}: transformers' heuristic stop (the best "
                        f"running beam scored at its current length) has no CTranslate2 equal; early_stopping=True "
                        f"and 'never' decode alike on both engines")
    return problems


def stopping_note(effective: GenerationConfig) -> str:
    """What a user who left early_stopping unset should know when CTranslate2 runs the beam search ('' if
    nothing): it stops as early_stopping=True does."""
    beams = effective.num_beams or 1
    penalty = 1.0 if effective.length_penalty is None else effective.length_penalty
    if beams > 1 and not effective.do_sample and effective.early_stopping in (None, False) and penalty > 0:
        return ("; beam search stops once num_beams hypotheses have ended (early_stopping=True): transformers' "
                "default heuristic has no CTranslate2 equal (set early_stopping=True or 'never' for the same search "
                "on both engines, or --decoding_backend=transformers for transformers' default)")
    return ""


def searches_exhaustively(effective: GenerationConfig) -> bool:
    """Whether generate's beam search runs until no running beam can win (early_stopping='never', or False/unset
    (None in transformers 5) with length_penalty <= 0, whose heuristic bound is then exact) rather than until
    num_beams hypotheses ended."""
    penalty = 1.0 if effective.length_penalty is None else effective.length_penalty
    return effective.early_stopping == "never" or (effective.early_stopping in (None, False) and penalty <= 0)


def _as_list(value: int | list[int] | tuple[int, ...]) -> list[int]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


@dataclass(frozen=True)
class Ctranslate2Call:
    """What one translate_batch / generate_batch call needs for a generation config."""

    arguments: dict[str, int | float | bool]  # keyword arguments of translate_batch / generate_batch
    per_example: int  # hypotheses kept per example (num_return_sequences)
    rerank_cut: bool  # rank hypotheses cut at the length bound as transformers does under forced_eos_token_id
    stops_when_ended: int | None = None  # early_stopping=True: the search ends once this many hypotheses ended
    copies: int = 1  # each returned hypothesis stands for this many (sampling from one token: all are the same)


def ctranslate2_call(effective: GenerationConfig, kind: str, decoder_input_width: int = 1,
                     vocabulary_size: int | None = None) -> Ctranslate2Call:
    """The CTranslate2 call that decodes as ``generate`` does with ``effective`` (see the module docstring) a batch
    whose decoder input is ``decoder_input_width`` wide (textbox.decoding.lengths: a decoder-only model's
    max_length and min_length count its left-padded prompt, so its call is made per batch)."""

    sampling = bool(effective.do_sample)
    beams = 1 if sampling else (effective.num_beams or 1)
    max_new, min_new = new_token_bounds(effective, decoder_input_width)
    if effective.forced_eos_token_id is not None:
        max_new -= 1  # the last step could only be the forced end token
    max_new = max(1, max_new)
    hypotheses = effective.num_return_sequences or 1
    penalty = float(effective.length_penalty if effective.length_penalty is not None else 1.0)
    arguments: dict[str, int | float | bool] = {
        "beam_size": beams,
        "num_hypotheses": hypotheses,
        "length_penalty": penalty,
        "repetition_penalty": float(effective.repetition_penalty or 1.0),
        "no_repeat_ngram_size": int(effective.no_repeat_ngram_size or 0),
    }
    rerank_cut = False
    if beams > 1:
        # Hypotheses keep their end token, so that lengths (and length-normalised scores) count it as
        # transformers' do; patience sets when the search stops (see the module docstring).
        patience = max_new if searches_exhaustively(effective) else 1
        arguments.update(patience=float(patience), return_end_token=True, return_scores=True)
        if effective.forced_eos_token_id is not None and penalty != 0:  # see rerank_cut_hypotheses
            rerank_cut = True
            arguments["num_hypotheses"] = beams * patience
    copies = 1
    if sampling:  # an unset top_k is transformers' default (50), not CTranslate2's 0 (the whole vocabulary)
        top_k = int(effective.top_k if effective.top_k is not None else _GENERATE_DEFAULTS["top_k"])
        if vocabulary_size is not None and top_k >= vocabulary_size:
            top_k = 0  # the whole vocabulary, as transformers clips it (CTranslate2 refuses a larger top_k)
        if top_k == 1:  # every sample is the best token: CTranslate2 refuses several, they are copies
            copies, arguments["num_hypotheses"] = hypotheses, 1
        arguments.update(sampling_topk=top_k, sampling_topp=float(effective.top_p or 1.0),
                         sampling_temperature=float(effective.temperature or 1.0))
    if kind == "translator":  # max_input_length=0: CTranslate2 would cut sources after 1024 tokens
        arguments.update(max_decoding_length=max_new, min_decoding_length=min(min_new, max_new), max_input_length=0)
    else:
        arguments.update(max_length=max_new, min_length=min(min_new, max_new), include_prompt_in_result=False)
    return Ctranslate2Call(arguments, hypotheses, rerank_cut,
                           beams if rerank_cut and not searches_exhaustively(effective) else None, copies)


def rerank_cut_hypotheses(tokens: list[list[str]], scores: list[float], end_token: str, length_penalty: float,
                          count: int, stops_when_ended: int | None) -> list[list[str]]:
    """The ``count`` best of a beam's hypotheses as transformers ranks them under forced_eos_token_id: one cut at
    the length bound without an end token counts one token more (the end token transformers forces there), so
    its score ``s = raw / length**penalty`` becomes ``raw / (length + 1)**penalty``. A search that stops once
    ``stops_when_ended`` hypotheses have ended (early_stopping=True) never reaches that forced step when they
    had ended by the bound: the cut ones are then not candidates."""
    ended = sum(1 for hypothesis in tokens if hypothesis and hypothesis[-1] == end_token)
    keep_cut = stops_when_ended is None or ended < stops_when_ended
    ranked = []
    for hypothesis, score in zip(tokens, scores):
        if not hypothesis or hypothesis[-1] != end_token:
            if not keep_cut:
                continue
            score = score * (len(hypothesis) / (len(hypothesis) + 1)) ** length_penalty if hypothesis else score
            hypothesis = [*hypothesis, end_token]
        ranked.append((score, hypothesis))
    ranked.sort(key=lambda pair: -pair[0])
    return [hypothesis for _, hypothesis in ranked[:count]]
