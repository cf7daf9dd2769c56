"""Checks of ``generation_kwargs`` before anything is built or trained.

Without them a bad value (``{'num_beams': 0}``) trains for hours and then dies at test time inside ``generate``
with a traceback, and a misspelled key (``num_beam``) reaches ``generate`` as a model argument. Two layers:
our rules (ranges, keys this framework cannot honour, keys transformers 5 moved to the hub), then transformers'
own ``GenerationConfig.validate(strict=True)``, whose errors and warnings become one message per problem.

Only the user's settings are checked here; the model's ``generation_config`` is not loaded yet. transformers is
imported only when there is something to check, so ``--help`` and plain configs stay fast.
"""
from __future__ import annotations

import logging
import warnings
from numbers import Real
from typing import Any, Callable, Mapping

from textbox.config import Config
from textbox.config.families import FAMILIES
from textbox.utils.suggest import suggest

# Decoding modes transformers 5 moved to the Hugging Face hub: generate() downloads their code at run time
# (trust_remote_code), which fails offline and runs unreviewed code online (ENVIRONMENT.md).
_ON_THE_HUB = {
    "penalty_alpha": "contrastive search",
    "num_beam_groups": "diverse (group) beam search",
    "diversity_penalty": "diverse (group) beam search",
    "dola_layers": "DoLa decoding",
    "constraints": "constrained beam search",
    "force_words_ids": "constrained beam search",
    "low_memory": "contrastive search's low-memory mode",
}
_OUTPUTS = ("return_dict_in_generate", "output_scores", "output_logits", "output_attentions",
            "output_hidden_states")
_ASSISTED = ("is_assistant", "num_assistant_tokens", "num_assistant_tokens_schedule",
             "assistant_confidence_threshold", "assistant_lookbehind", "target_lookbehind",
             "assistant_ensemble_weight", "assistant_early_exit", "use_mtp", "speculation_type")
_REFUSED = {
    **{key: f"{mode} was moved out of transformers 5 into hub code that generate() downloads at run time "
            f"(it fails offline); it is not supported here" for key, mode in _ON_THE_HUB.items()},
    **{key: "the framework keeps only the generated sequences (generation.txt, generation_all.txt), so this "
            "extra output would be dropped; remove it" for key in _OUTPUTS},
    **{key: "assisted decoding needs an assistant model (or early-exit / multi-token heads), which this "
            "framework does not pass to generate; remove it" for key in _ASSISTED},
    "compile_config": "compiled decoding was retired: CTranslate2 (--decoding_backend=auto) decodes faster; remove it",
    "token_healing": "token healing needs the tokenizer inside generate, which this framework does not pass; "
                     "remove it",
    "continuous_batching_config": "continuous batching is not how this framework decodes; remove it",
    "transformers_version": "it is metadata, not a setting; remove it",
}
# key -> (lowest allowed, whether the lowest is excluded); integers only where the type says int.
_INTEGERS = {"num_beams": 1, "num_return_sequences": 1, "max_new_tokens": 1, "max_length": 1,
             "min_new_tokens": 0, "min_length": 0, "no_repeat_ngram_size": 0,
             "encoder_no_repeat_ngram_size": 0, "top_k": 0, "prompt_lookup_num_tokens": 1,
             "max_matching_ngram_size": 1}
_POSITIVE = ("temperature", "repetition_penalty", "encoder_repetition_penalty", "max_time")
_UNIT_INTERVAL = ("top_p", "typical_p")  # (0, 1]
_BOOLEANS = ("do_sample", "use_cache", "renormalize_logits", "remove_invalid_values")
# Keys whose every constraint in transformers' validation our rules check too: alone, they need no transformers
# import (the embedded default decodes with them, and its config is checked before anything heavy is imported).
_SETTLED_BY_OUR_RULES = frozenset({"num_beams", "no_repeat_ngram_size"})


def problems(config: Config) -> list[str]:
    """The --generation_kwargs of a configuration (textbox/checks.py calls this with the other registries' checks,
    before anything runs)."""
    found = generation_problems(config["generation_kwargs"], config.where)
    return found or _prompt_room_problems(config)


def _prompt_room_problems(config: Config) -> list[str]:
    """A decoder-only model's max_length counts its left-padded prompt (up to src_len + the separator): a
    max_length that a prompt can fill would stop generate with a ValueError at test time, after training."""

    family = FAMILIES.get(str(config["model"]).lower())
    longest_prompt = config["src_len"] + 1
    max_length = config["generation_kwargs"].get("max_length")
    if family is None or not family.decoder_only or max_length is None or max_length > longest_prompt:
        return []
    return [f"{config.where('generation_kwargs')}: max_length={max_length} counts the prompt of a decoder-only "
            f"model, which can be src_len + 1 (the separator) = {longest_prompt} tokens, leaving no token to "
            f"generate; use max_new_tokens (new tokens only), or raise max_length above {longest_prompt}"]


def generation_problems(kwargs: Mapping[str, object], where: Callable[[str], str]) -> list[str]:
    """Every problem with ``generation_kwargs`` (empty when generate will accept it), each naming the key."""
    if not kwargs:
        return []
    name = where("generation_kwargs")
    problems = [f"{name}: {problem}" for problem in _rule_problems(kwargs)]
    if not problems and not _SETTLED_BY_OUR_RULES.issuperset(kwargs):  # transformers' checks assume right types
        problems = [f"{name}: {problem}" for problem in _transformers_problems(kwargs)]
    return problems


def _known_keys() -> set[str]:
    from transformers import GenerationConfig

    return {key for key in vars(GenerationConfig()) if not key.startswith("_")}


def _rule_problems(kwargs: Mapping[str, object]) -> list[str]:
    known = _SETTLED_BY_OUR_RULES if _SETTLED_BY_OUR_RULES.issuperset(kwargs) else _known_keys()
    problems = []
    for key, value in kwargs.items():
        if not isinstance(key, str) or key not in known:
            problems.append(f"unknown generation setting {key!r}{suggest(str(key), known - set(_REFUSED))} "
                            f"(the keys are those of transformers' GenerationConfig)")
        elif key in _REFUSED:
            problems.append(f"{key!r} is not accepted: {_REFUSED[key]}")
        else:
            problem = _value_problem(key, value)
            if problem:
                problems.append(f"{key!r} {problem}")
    if problems:
        return problems
    return _combination_problems(kwargs)


def _value_problem(key: str, value: Any) -> str | None:
    number = isinstance(value, Real) and not isinstance(value, bool)
    if key in _INTEGERS:
        if not isinstance(value, int) or isinstance(value, bool):
            return f"must be an integer, got {value!r}"
        if value < _INTEGERS[key]:
            return f"must be at least {_INTEGERS[key]}, got {value}"
    elif key in _POSITIVE:
        if not number or not value > 0:
            return f"must be a number above 0, got {value!r}"
    elif key in _UNIT_INTERVAL:
        if not number or not 0 < value <= 1:
            return f"must be a number in (0, 1], got {value!r}"
    elif key == "min_p":
        if not number or not 0 <= value <= 1:
            return f"must be a number in [0, 1], got {value!r}"
    elif key in _BOOLEANS:
        if not isinstance(value, bool):
            return f"must be True or False, got {value!r}"
    return None


def _combination_problems(kwargs: Mapping[str, Any]) -> list[str]:
    problems = []
    beams = kwargs.get("num_beams", 1)
    returned = kwargs.get("num_return_sequences", 1)
    if returned > 1 and not kwargs.get("do_sample", False) and returned > beams:
        problems.append(f"'num_return_sequences' ({returned}) needs num_beams >= {returned} (beam search returns "
                        f"its best {returned} beams) or do_sample=True (independent samples); num_beams is {beams}")
    for low, high in (("min_new_tokens", "max_new_tokens"), ("min_length", "max_length")):
        if low in kwargs and high in kwargs and kwargs[low] > kwargs[high]:
            problems.append(f"{low!r} ({kwargs[low]}) is larger than {high!r} ({kwargs[high]})")
    for new, total in (("max_new_tokens", "max_length"), ("min_new_tokens", "min_length")):
        if new in kwargs and total in kwargs:
            problems.append(f"{new!r} and {total!r} are both set and generate ignores {total!r}; give one of them")
    if kwargs.get("prompt_lookup_num_tokens") is not None and beams > 1:
        problems.append(f"'prompt_lookup_num_tokens' works with greedy or sampling decoding only; transformers "
                        f"ignores it with num_beams={beams}")
    return problems


def _transformers_problems(kwargs: Mapping[str, object]) -> list[str]:
    """transformers' GenerationConfig validation, strict: what it would only log becomes a problem too."""
    from transformers import GenerationConfig
    from transformers.utils import logging as hf_logging

    library_logger = hf_logging.get_logger("transformers.generation.configuration_utils")
    records: list[str] = []
    handler = _Collect(records)
    library_logger.addHandler(handler)
    propagates, library_logger.propagate = library_logger.propagate, False  # collected here, not printed
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                GenerationConfig(**kwargs).validate(strict=True, user_set_attributes=set(kwargs))
            except (ValueError, TypeError) as error:
                records.append(str(error))
    finally:
        library_logger.removeHandler(handler)
        library_logger.propagate = propagates
    records.extend(str(warning.message) for warning in caught)
    return [_one_line(record) for record in dict.fromkeys(records)]


class _Collect(logging.Handler):
    """Keeps the library's warnings (validate() logs minor issues instead of raising when not strict)."""

    def __init__(self, records: list[str]):
        super().__init__(level=logging.WARNING)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if not message.startswith("The following generation flags are not valid"):  # strict validate says which
            self.records.append(message)


def _one_line(message: str) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    lines = [line.removeprefix("- ") for line in lines if not line.startswith("If you're using a pretrained model")]
    return "transformers says: " + " ".join(lines)
