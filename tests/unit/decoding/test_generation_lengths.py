"""Length bounds as a run passes them (--generation_kwargs through the Evaluator): a max_length or min_length the
user gives is honoured on both engines, for encoder-decoder and decoder-only models, as ``model.generate`` honours
it, though every checkpoint stores max_new_tokens = tgt_len (which generate ranks above max_length)."""
from __future__ import annotations

import copy

import pytest

from textbox.config import ConfigError, TextBoxUserError
from textbox.model.loading import set_generation_length
from tests.unit.decoding.conftest import SOURCES
from tests.unit.decoding.engines import evaluator, examples, generate_on_batches

TGT_LEN = 16
BACKENDS = ["transformers", "ctranslate2"]


def _run(model, tokenizer, sources, generation_kwargs, backend, tmp_path):
    """The run's texts: the Evaluator's generation settings (generation_kwargs over tgt_len) and engine."""
    built = evaluator(model, tokenizer, 4, generation_kwargs=generation_kwargs, tgt_len=TGT_LEN,
                      decoding_backend=backend, decoding_precision="float32", cache_dir=str(tmp_path))
    loader = built.loader(examples(model, tokenizer, sources))
    return [text for texts in built.generate(model, loader, "test") for text in texts], loader


def _widest_prompt(model, tokenizer, sources):
    return max(len(example["input_ids"]) + 1 for example in examples(model, tokenizer, sources))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_max_length_given_outranks_the_stored_max_new_tokens(trained_any, pairs, backend, tmp_path):
    model, tokenizer = trained_any
    set_generation_length(model, TGT_LEN)  # what every checkpoint of the framework stores
    sources = [source for source, _ in pairs[:40]]
    decoder_only = not model.config.is_encoder_decoder
    max_length = _widest_prompt(model, tokenizer, sources) + 2 if decoder_only else 4
    texts, loader = _run(model, tokenizer, sources, {"max_length": max_length}, backend, tmp_path)
    reference = copy.deepcopy(model)
    reference.generation_config.max_new_tokens = None
    expected = generate_on_batches(reference, tokenizer, loader, {"max_length": max_length})
    assert texts == expected
    assert expected != generate_on_batches(model, tokenizer, loader, {})  # shorter than tgt_len: the bound bites


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_min_length_given_outranks_a_stored_min_new_tokens_and_counts_the_prompt(trained_any, pairs, backend,
                                                                                    tmp_path):
    """A decoder-only model's min_length counts its left-padded prompt, as generate counts it (CTranslate2 took it
    as new tokens: 17/60 and 3/60 outputs equal for the tiny GPT-2 and Llama)."""
    model, tokenizer = trained_any
    model.generation_config.min_new_tokens = 1  # a checkpoint that stores the other form of the bound
    sources = [source for source, _ in pairs[:60]]
    min_length = 12 if not model.config.is_encoder_decoder else 8
    texts, loader = _run(model, tokenizer, sources, {"min_length": min_length}, backend, tmp_path)
    reference = copy.deepcopy(model)
    reference.generation_config.min_new_tokens = None
    expected = generate_on_batches(reference, tokenizer, loader, {"min_length": min_length, "max_new_tokens": TGT_LEN})
    assert texts == expected
    assert expected != generate_on_batches(reference, tokenizer, loader, {"max_new_tokens": TGT_LEN})  # it bites


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_max_length_a_prompt_fills_is_a_clear_error_on_both_engines(trained_causal, backend, tmp_path):
    model, tokenizer = trained_causal
    widest = _widest_prompt(model, tokenizer, SOURCES)
    with pytest.raises(TextBoxUserError, match=f"max_length={widest} counts the decoder's input too, which is "
                                               f"{widest} tokens here"):
        _run(model, tokenizer, SOURCES, {"max_length": widest}, backend, tmp_path)


def test_a_decoder_only_max_length_within_the_longest_prompt_is_refused_before_anything_runs(tmp_path):
    from textbox.checks import load_checked_config
    from tests.causal_helpers import save_tiny_causal_lm
    from tests.helpers import make_copy_dataset

    data = make_copy_dataset(tmp_path / "data")
    model_path = save_tiny_causal_lm(tmp_path / "gpt2", SOURCES, "gpt2", tmp_path / "tok")
    values = {"dataset": "copy", "data_path": str(data), "model": "gpt2", "model_path": str(model_path),
              "src_len": 24}
    with pytest.raises(ConfigError, match=r"max_length=25 counts the prompt of a decoder-only model, which can be "
                                          r"src_len \+ 1 \(the separator\) = 25 tokens"):
        load_checked_config([], {**values, "generation_kwargs": {"max_length": 25}})
    load_checked_config([], {**values, "generation_kwargs": {"max_length": 26}})
