"""In-place n-gram blocking bans exactly what transformers' processor bans, at the same place in generate's
processor list: outputs equal model.generate's with the library's own processor, forced end-of-sequence or not."""
from __future__ import annotations

import copy

import pytest
import torch
from transformers import GenerationConfig, NoRepeatNGramLogitsProcessor

from textbox.decoding import ngram_blocking
from textbox.decoding.ngram_blocking import InPlaceNoRepeatNGram, with_in_place_ngram_blocking


@pytest.mark.parametrize(("size", "length"), [(1, 6), (2, 9), (3, 30), (3, 2), (4, 40)])
def test_the_same_scores_as_transformers(size: int, length: int):
    generator = torch.Generator().manual_seed(size * 100 + length)
    ids = torch.randint(0, 12, (16, length), generator=generator)  # a small alphabet repeats n-grams often
    ids[0, -1] = 40  # an id past the scores' width (a larger embedding than output layer) bans nothing
    scores = torch.randn(16, 30, generator=generator)
    expected = NoRepeatNGramLogitsProcessor(size)(ids, scores.clone())
    assert torch.equal(InPlaceNoRepeatNGram(size)(ids, scores.clone()), expected)
    if length >= size:
        assert torch.isinf(expected).any()  # the case really bans something


@pytest.fixture(scope="module")
def bart_without_forced_eos(tiny_bart):
    model = copy.deepcopy(tiny_bart)
    model.generation_config.forced_eos_token_id = None
    model.config.forced_eos_token_id = None
    return model


@pytest.fixture
def in_place_calls(monkeypatch) -> list[int]:
    """Counts the in-place processor's calls, so that a test knows it really ran."""
    calls: list[int] = []
    original = InPlaceNoRepeatNGram.__call__

    def counted(self, input_ids, scores):
        calls.append(self.ngram_size)
        return original(self, input_ids, scores)

    monkeypatch.setattr(InPlaceNoRepeatNGram, "__call__", counted)
    return calls


@pytest.mark.parametrize("forced_eos", [True, False], ids=["forced-eos", "no-forced-eos"])
@pytest.mark.parametrize("num_beams", [1, 3], ids=["greedy", "beam3"])
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_generate_gives_the_same_outputs(tiny_bart, bart_without_forced_eos, batch, in_place_calls, forced_eos,
                                         num_beams, size):
    model = tiny_bart if forced_eos else bart_without_forced_eos
    assert (model.generation_config.forced_eos_token_id is not None) == forced_eos
    library = {"num_beams": num_beams, "no_repeat_ngram_size": size, "max_new_tokens": 12}
    swapped = with_in_place_ngram_blocking(library, model.generation_config)
    assert swapped["custom_generate"] is ngram_blocking.decode_with_in_place_ngram_blocking
    with torch.no_grad():
        expected = model.generate(**batch, **library)
        assert not in_place_calls
        assert torch.equal(model.generate(**batch, **swapped), expected)
    assert in_place_calls and set(in_place_calls) == {size}


def test_the_forced_eos_case_is_really_tested(tiny_bart, batch):
    """Blocking applied after forced end-of-sequence (the old order) gives other beams on this model: the test
    above would catch a processor put in the wrong place."""
    from transformers import LogitsProcessorList

    library = {"num_beams": 3, "no_repeat_ngram_size": 1, "max_new_tokens": 12}
    appended = {**library, "no_repeat_ngram_size": 0, "logits_processor": LogitsProcessorList([InPlaceNoRepeatNGram(1)])}
    with torch.no_grad():
        assert not torch.equal(tiny_bart.generate(**batch, **library), tiny_bart.generate(**batch, **appended))


def test_sampling_gives_the_same_outputs(tiny_bart, batch, in_place_calls):
    library = {"do_sample": True, "top_k": 0, "no_repeat_ngram_size": 2, "max_new_tokens": 10, "num_return_sequences": 2}
    swapped = with_in_place_ngram_blocking(library, tiny_bart.generation_config)
    with torch.no_grad():
        torch.manual_seed(3)
        expected = tiny_bart.generate(**batch, **library)
        torch.manual_seed(3)
        assert torch.equal(tiny_bart.generate(**batch, **swapped), expected)
    assert in_place_calls


def test_settings_unchanged_where_nothing_is_blocked_or_the_mode_is_another():
    config = GenerationConfig()
    assert with_in_place_ngram_blocking({"num_beams": 4}, config) == {"num_beams": 4}
    assert with_in_place_ngram_blocking({"no_repeat_ngram_size": 0}, GenerationConfig(no_repeat_ngram_size=3)) == \
        {"no_repeat_ngram_size": 0}
    with_stop = {"no_repeat_ngram_size": 3, "stop_strings": ["."]}  # a custom loop would not get the tokenizer
    assert with_in_place_ngram_blocking(with_stop, config) == with_stop
    from_model = with_in_place_ngram_blocking({}, GenerationConfig(no_repeat_ngram_size=3))
    assert from_model == {"custom_generate": ngram_blocking.decode_with_in_place_ngram_blocking}


@pytest.mark.parametrize("size", [2, 3])
def test_decoder_only_outputs_equal_generate_on_each_example_alone_whatever_the_batch(trained_causal, pairs, size,
                                                                                      tmp_path):
    """Left padding is no part of the n-grams: transformers' own processor counts it (the pad token, here the end
    token, makes n-grams with the prompt), and 4 of 60 outputs of the tiny GPT-2 changed with the batch."""
    from tests.unit.decoding.engines import decode, generate_alone

    model, tokenizer = trained_causal
    sources = [source for source, _ in pairs[:60]]
    settings = {"no_repeat_ngram_size": size, "max_new_tokens": 16}
    expected = generate_alone(model, tokenizer, sources, settings)
    for batch_size in (16, 5):
        assert decode(model, tokenizer, sources, settings, "transformers", tmp_path, batch_size) == expected
