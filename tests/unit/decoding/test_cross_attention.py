"""Cross-attention once per source: outputs identical to transformers' own beam search, one cached row per
source, and the model left as it was."""
from __future__ import annotations

import pytest
import torch

from textbox.decoding.cross_attention import shared_cross_attention


@pytest.mark.parametrize("settings", [
    {"num_beams": 4},
    {"num_beams": 3, "no_repeat_ngram_size": 2, "length_penalty": 0.6},
    {"num_beams": 4, "num_return_sequences": 2},
])
def test_beam_search_outputs_are_identical(tiny_bart, batch, settings):
    with torch.no_grad():
        plain = tiny_bart.generate(**batch, max_new_tokens=12, **settings)
        with shared_cross_attention(tiny_bart, settings["num_beams"]) as extra:
            shared = tiny_bart.generate(**batch, max_new_tokens=12, **settings, **extra())
    assert torch.equal(plain, shared)


def test_the_cache_holds_one_row_per_source_and_the_model_is_restored(tiny_bart, batch):
    with torch.no_grad(), shared_cross_attention(tiny_bart, 4) as extra:
        arguments = extra()
        tiny_bart.generate(**batch, num_beams=4, max_new_tokens=5, **arguments)
    cache = arguments["past_key_values"]
    sources = batch["input_ids"].shape[0]
    assert [layer.keys.shape[0] for layer in cache.cross_attention_cache.layers] == [sources, sources]
    assert [layer.keys.shape[0] for layer in cache.self_attention_cache.layers] == [sources * 4, sources * 4]
    assert tiny_bart.config._attn_implementation == "sdpa"


def test_restored_after_an_error(tiny_bart):
    with pytest.raises(ValueError), shared_cross_attention(tiny_bart, 2):
        raise ValueError("generation failed")
    assert tiny_bart.config._attn_implementation == "sdpa"


def test_without_beams_nothing_changes(tiny_bart):
    with shared_cross_attention(tiny_bart, 1) as extra:
        assert extra() == {}
        assert tiny_bart.config._attn_implementation == "sdpa"


def test_transformers_runs_the_encoder_once_per_source_under_beam_search(tiny_bart, batch):
    """What the module docstring relies on: no encoder work to save, only cross-attention copies."""
    encoder_batches = []
    hook = tiny_bart.get_encoder().register_forward_hook(
        lambda module, inputs, output: encoder_batches.append(output.last_hidden_state.shape[0]))
    try:
        with torch.no_grad():
            tiny_bart.generate(**batch, num_beams=4, max_new_tokens=5)
    finally:
        hook.remove()
    assert encoder_batches == [batch["input_ids"].shape[0]]
