"""In-place n-gram blocking bans exactly what transformers' processor bans, and replaces it only where its
place among generate's processors cannot change the outputs."""
from __future__ import annotations

import pytest
import torch
from transformers import GenerationConfig, NoRepeatNGramLogitsProcessor

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


def test_generate_gives_the_same_outputs(tiny_bart, batch):
    for settings in ({"num_beams": 3}, {"num_beams": 1, "min_new_tokens": 15}):
        library = {**settings, "no_repeat_ngram_size": 2, "max_new_tokens": 15}
        swapped = with_in_place_ngram_blocking(library, tiny_bart.generation_config)
        assert swapped["no_repeat_ngram_size"] == 0
        with torch.no_grad():
            assert torch.equal(tiny_bart.generate(**batch, **library), tiny_bart.generate(**batch, **swapped))


def test_replaced_only_where_processor_order_cannot_matter():
    config = GenerationConfig()
    assert with_in_place_ngram_blocking({"num_beams": 4}, config) == {"num_beams": 4}
    for unsafe in ({"do_sample": True}, {"renormalize_logits": True}, {"return_dict_in_generate": True}):
        settings = {"no_repeat_ngram_size": 3, **unsafe}
        assert with_in_place_ngram_blocking(settings, config) == settings
    from_model = with_in_place_ngram_blocking({}, GenerationConfig(no_repeat_ngram_size=3))
    assert from_model["no_repeat_ngram_size"] == 0
    assert [type(p).__name__ for p in from_model["logits_processor"]] == ["InPlaceNoRepeatNGram"]
