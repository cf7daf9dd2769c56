"""The family table (textbox.config.families) is the one answer: every layer that asks what a --model is (the
registry, tokenisation, batching, key support, checkpoint detection, validation, the decoding engine) gives the
table's answer, for every name."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from textbox.config import families
from textbox.config.checkpoint_family import DECODER_ONLY_FAMILIES, PAIR_FAMILIES, RNN_FAMILIES, SEQ2SEQ_FAMILIES
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.collate import CausalLMCollator, make_collator
from textbox.data.tokenize import decoder_only
from textbox.decoding.engine import _static_refusals
from textbox.config import family_keys as keys
from textbox.model.checks import _pretraining_problems
from textbox.model.build import BUILDERS, get_builder

NAMES = sorted(families.FAMILIES)
TOKENIZER = SimpleNamespace(pad_token_id=1, eos_token_id=2)


def values(**changes) -> dict:
    return {**DEFAULTS, **changes}


def test_every_name_in_the_table_has_a_builder_and_key_support_through_its_kind():
    assert set(BUILDERS) == set(families.KINDS) == set(keys.SUPPORT)
    for name in NAMES:
        facts = families.family(name)
        module, function = BUILDERS[facts.kind.name].split(":")
        built_by = get_builder(name)
        assert (built_by.__module__, built_by.__name__) == (module, function)
        assert facts.needs_model_path == (not facts.kind.builds_new)
    with pytest.raises(KeyError, match="unknown model 'gtp2'.*gpt2"):
        get_builder("gtp2")
    assert families.family("GPT2") is families.FAMILIES["gpt2"]  # --model is case-insensitive
    with pytest.raises(KeyError):
        families.family("gtp2")


@pytest.mark.parametrize("name", NAMES)
def test_tokenisation_and_batching_ask_the_table_whether_a_model_is_decoder_only(name):
    config = Config(values(model=name))
    expected = families.is_decoder_only(name)
    assert decoder_only(config) is expected
    assert isinstance(make_collator(config, TOKENIZER), CausalLMCollator) is expected
    assert (name in DECODER_ONLY_FAMILIES) is expected  # checkpoint detection: which names take a causal LM
    # key support: a decoder-only family refuses denoising, the encoder-decoders' rows do not
    refused = keys.SUPPORT[families.family(name).kind.name][keys.CHECKPOINT]["pretrain_task"] if \
        keys.CHECKPOINT in keys.SUPPORT[families.family(name).kind.name] else keys.HONOURED
    assert isinstance(refused, keys.Refusal) is expected


def test_checkpoint_detection_groups_names_by_kind():
    kinds = {name: families.family(name).kind.name for name in NAMES}
    assert {name for name, kind in kinds.items() if kind == families.SEQ2SEQ} == set(SEQ2SEQ_FAMILIES)
    assert {name for name, kind in kinds.items() if kind == families.ENCODER_DECODER} == set(PAIR_FAMILIES)
    assert {name for name, kind in kinds.items() if kind == families.RNN} == set(RNN_FAMILIES)


@pytest.mark.parametrize("name", NAMES)
def test_denoising_is_refused_before_loading_exactly_for_families_without_a_mask_token(name):
    problems = _pretraining_problems(Config(values(model=name, pretrain_task="denoising",
                                                   metrics_for_best_model=["loss"])))
    refused = [problem for problem in problems if "has none" in problem]
    assert bool(refused) is (families.family(name).mask_token is False)


@pytest.mark.parametrize("name", NAMES)
def test_ctranslate2_is_refused_before_building_exactly_for_families_it_cannot_run(name):
    why = _static_refusals(values(model=name, decoding_backend="ctranslate2"))
    refused = [reason for reason in why if reason.startswith(f"--model={name} is ")]
    assert bool(refused) is (not families.family(name).ctranslate2)
    if refused:
        assert families.family(name).kind.what in refused[0]
