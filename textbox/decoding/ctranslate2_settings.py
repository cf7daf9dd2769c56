"""transformers generation settings -> CTranslate2 ``translate_batch``/``generate_batch`` arguments.

Every setting either maps to an argument that decodes alike (checked against ``model.generate`` in
tests/unit/decoding/test_ctranslate2.py) or is named by ``unsupported_settings``: the run then decodes with
transformers (``--decoding_backend=auto``) or is refused (``ctranslate2``). Nothing is dropped silently.

How lengths are counted (measured against transformers 5 on BART):
- transformers' ``max_new_tokens`` counts the end token; CTranslate2's ``max_decoding_length`` counts it too.
  ``max_length`` (encoder-decoder) also counts the decoder start token: max_new_tokens = max_length - 1.
- ``forced_eos_token_id`` (BART's convention) makes the last allowed step the end token; CTranslate2 has no
  forcing, so the bound is one less and a hypothesis cut there is the same tokens without the end token.
  Beam search then ranks a hypothesis cut there by its length with the end token, as transformers does
  (``rerank_cut_hypotheses``): without that, 9% of a tiny model's beam-4 outputs differed, with it 1.5%.
- ``min_new_tokens`` = CTranslate2's ``min_decoding_length``, at least 1 when lengths are normalised: its 1 already
  allows an immediate end token and its 0 then ranks that hypothesis differently (it matched only with
  length_penalty=0); ``min_length`` counts the decoder start token.
- ``length_penalty`` up to 1 matches; above 1 transformers' default stopping keeps searching longer than
  CTranslate2's, so beam search with it is left to transformers.
What remains different, measured on the benchmark model (benchmarks/decode_speed.py, multi30k, 320 examples,
beam 4): 5 outputs of 320. They are not ties: transformers' default stopping (early_stopping=False) keeps
searching while a running beam could still win and finds a longer hypothesis that scores 0.009-0.13 better
(length-normalised log-probability, rescored with the model); CTranslate2 stops once its best beam has ended.
Its ``patience=2`` or 4 does not close the gap (it then finds other, better-scoring hypotheses transformers does
not), so the default is kept. Greedy decoding: 320/320 identical.
Not mapped, because measured not to decode alike (tiny BART, 200 examples): ``repetition_penalty`` (transformers
also penalises the decoder start token, BART's end token, so its outputs run longer: 95/200 identical) and
``no_repeat_ngram_size`` with beams (CTranslate2 bans before normalising the scores, transformers after: 155-170/200
identical; greedy: 200/200, mapped).
Nothing heavy is imported at module level: config validation calls ``unsupported_settings`` with no model.
"""
from __future__ import annotations

from typing import Any

# Settings that change nothing in the output or are handled below.
_MAPPED = {"max_new_tokens", "max_length", "min_new_tokens", "min_length", "num_beams", "length_penalty",
           "no_repeat_ngram_size", "repetition_penalty", "do_sample", "top_k", "top_p", "temperature",
           "num_return_sequences", "early_stopping", "forced_bos_token_id", "forced_eos_token_id",
           "decoder_start_token_id", "bos_token_id", "eos_token_id", "pad_token_id", "use_cache"}
# Fields of a GenerationConfig that never change what is generated.
_BOOKKEEPING = {"transformers_version", "_from_model_config", "return_dict_in_generate", "output_scores",
                "output_logits", "output_attentions", "output_hidden_states", "is_assistant"}


def unsupported_settings(settings: dict[str, Any], generation_config: Any = None,
                         decoder_start: int | None = None) -> list[str]:
    """What in ``settings`` (over the model's ``generation_config``, when given) CTranslate2 cannot do alike."""
    problems = [f"{name}={settings[name]!r} has no CTranslate2 equal" for name in sorted(settings)
                if name not in _MAPPED and name not in _BOOKKEEPING]
    merged = dict(settings)
    if generation_config is not None:
        effective = effective_config(generation_config, {k: v for k, v in settings.items() if k in _MAPPED})
        merged = effective.to_diff_dict()
        problems.extend(f"the model's generation_config sets {name}={merged[name]!r}, which has no CTranslate2 "
                        f"equal" for name in sorted(merged)
                        if name not in _MAPPED and name not in _BOOKKEEPING and name not in settings)
        merged = {name: getattr(effective, name) for name in _MAPPED}
    beams = merged.get("num_beams") or 1
    if (merged.get("repetition_penalty") or 1.0) != 1.0:
        problems.append(f"repetition_penalty={merged['repetition_penalty']!r}: transformers also penalises the "
                        f"decoder start token, CTranslate2 does not, so outputs differ")
    if (merged.get("no_repeat_ngram_size") or 0) > 0 and beams > 1 and not merged.get("do_sample"):
        problems.append(f"no_repeat_ngram_size={merged['no_repeat_ngram_size']} with num_beams={beams}: CTranslate2 "
                        f"bans n-grams before normalising the scores, transformers after, so beams rank differently "
                        f"(greedy decoding maps)")
    penalty = merged.get("length_penalty")
    if penalty is not None and penalty > 1.0 and beams > 1 and not merged.get("do_sample"):
        problems.append(f"length_penalty={penalty} with num_beams={beams}: transformers keeps searching for longer "
                        f"hypotheses than CTranslate2 does when the penalty exceeds 1 (measured: 104/120 outputs "
                        f"identical at 2.0; 117/120 at 1.0)")
    if merged.get("no_repeat_ngram_size") == 1:
        problems.append("no_repeat_ngram_size=1: transformers counts the decoder start token (BART's end token) "
                        "as generated and never ends, CTranslate2 does not")
    if merged.get("do_sample") and beams > 1:
        problems.append(f"do_sample=True with num_beams={beams} (beam sampling) has no CTranslate2 equal")
    if merged.get("early_stopping") not in (None, False):
        problems.append(f"early_stopping={merged['early_stopping']!r}: CTranslate2's beam search stops as "
                        f"transformers' default (early_stopping=False) does")
    eos, forced_eos = merged.get("eos_token_id"), merged.get("forced_eos_token_id")
    if forced_eos is not None and eos is not None and forced_eos not in _as_list(eos):
        problems.append(f"forced_eos_token_id={forced_eos} is not the end token {eos}")
    start = merged.get("decoder_start_token_id")
    if generation_config is not None and decoder_start is not None and start is not None and start != decoder_start:
        problems.append(f"decoder_start_token_id={start} differs from the model config's {decoder_start}, which "
                        f"the converted model starts with")
    return problems


def effective_config(generation_config: Any, settings: dict[str, Any]) -> Any:
    """The model's generation config with ``settings`` applied (what ``generate`` would use)."""
    import copy

    effective = copy.deepcopy(generation_config)
    effective.update(**settings)
    return effective


def _as_list(value: Any) -> list[int]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def ctranslate2_arguments(effective: Any, kind: str, encoder_decoder: bool) -> tuple[dict[str, Any], int]:
    """(keyword arguments of translate_batch / generate_batch, hypotheses per example) for ``effective``."""
    sampling = bool(effective.do_sample)
    beams = 1 if sampling else (effective.num_beams or 1)
    if effective.max_new_tokens is not None:
        max_new = effective.max_new_tokens
    else:
        max_new = effective.max_length - (1 if encoder_decoder else 0)  # decoder-only: see generator_lengths
    if effective.forced_eos_token_id is not None:
        max_new -= 1  # the last step could only be the forced end token
    if effective.min_new_tokens is not None:
        min_new = effective.min_new_tokens
    else:
        min_new = max(0, (effective.min_length or 0) - (1 if encoder_decoder else 0))
    if kind == "translator" and effective.length_penalty != 0:  # see the module docstring
        min_new = max(1, min_new)
    hypotheses = effective.num_return_sequences or 1
    arguments: dict[str, Any] = {
        "beam_size": beams,
        "num_hypotheses": hypotheses,
        "length_penalty": float(effective.length_penalty if effective.length_penalty is not None else 1.0),
        "repetition_penalty": float(effective.repetition_penalty or 1.0),
        "no_repeat_ngram_size": int(effective.no_repeat_ngram_size or 0),
    }
    if effective.forced_eos_token_id is not None and beams > 1:  # see rerank_cut_hypotheses
        arguments.update(num_hypotheses=beams, return_scores=True, return_end_token=True)
    if sampling:
        arguments.update(sampling_topk=int(effective.top_k or 0), sampling_topp=float(effective.top_p or 1.0),
                         sampling_temperature=float(effective.temperature or 1.0))
    if kind == "translator":
        arguments.update(max_decoding_length=max(1, max_new), min_decoding_length=min_new)
    else:
        arguments.update(max_length=max(1, max_new), min_length=min_new, include_prompt_in_result=False)
    return arguments, hypotheses


def rerank_cut_hypotheses(tokens: list[list[str]], scores: list[float], end_token: str, length_penalty: float,
                          count: int) -> list[list[str]]:
    """The ``count`` best of a beam's hypotheses as transformers ranks them under forced_eos_token_id: one cut at
    the length bound without an end token counts one token more (the end token transformers forces there), so
    its score ``s = raw / length**penalty`` becomes ``raw / (length + 1)**penalty``."""
    ranked = []
    for hypothesis, score in zip(tokens, scores):
        if not hypothesis or hypothesis[-1] != end_token:
            score = score * (len(hypothesis) / (len(hypothesis) + 1)) ** length_penalty if hypothesis else score
            hypothesis = [*hypothesis, end_token]
        ranked.append((score, hypothesis))
    ranked.sort(key=lambda pair: -pair[0])
    return [hypothesis for _, hypothesis in ranked[:count]]
