"""Decoder-only LMs (GPT-2, Llama) on CTranslate2's Generator: the same continuations as transformers' generate
from the left-padded prompts (tiny random models: every output runs to the length bound)."""
from __future__ import annotations


import pytest

from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.collate import CausalLMCollator
from textbox.decoding.engine import DecodingOptions
from textbox.decoding.generate import generate_texts
from tests.causal_helpers import causal_tokenizer, tiny_model
from tests.unit.decoding.conftest import SOURCES


@pytest.mark.parametrize("style", ["gpt2", "llama"])
@pytest.mark.parametrize("settings", [{"max_new_tokens": 6}, {"max_new_tokens": 6, "num_beams": 3},
                                      {"max_new_tokens": 6, "min_new_tokens": 6}])
def test_generator_continues_prompts_like_transformers(style, settings, tmp_path):
    from accelerate import Accelerator

    from textbox.evaluator.evaluator import Evaluator

    tokenizer = causal_tokenizer(SOURCES * 3, tmp_path / "tok", style)
    tokenizer.pad_token = tokenizer.eos_token
    model = tiny_model(style, tokenizer, seed=1).eval()
    evaluator = Evaluator(Config({**DEFAULTS, "eval_batch_size": 4}), Accelerator(cpu=True), tokenizer,
                          CausalLMCollator(tokenizer))
    data = [{"input_ids": ids, "labels": ids[:2]} for ids in tokenizer(SOURCES)["input_ids"]]
    texts = {}
    for backend in ("transformers", "ctranslate2"):
        texts[backend] = generate_texts(evaluator.accelerator, model, tokenizer, evaluator.loader(data),
                                        dict(settings), "test", DecodingOptions(backend, "float32",
                                                                                str(tmp_path / "cache"), 0))
    assert texts["ctranslate2"] == texts["transformers"] and any(texts["transformers"])


def test_an_empty_source_in_a_batch_changes_no_other_output(tmp_path):
    """A one-token prompt (an empty source: the separator alone) made CTranslate2 count lengths from, and return
    tokens from, the start of every prompt of its batch: 1 of 8 outputs equal before."""
    from tests.unit.decoding.engines import decode

    tokenizer = causal_tokenizer(SOURCES * 3, tmp_path / "tok", "gpt2")
    tokenizer.pad_token = tokenizer.eos_token
    model = tiny_model("gpt2", tokenizer, seed=1).eval()
    sources = ["", *SOURCES]
    settings = {"max_new_tokens": 6}
    expected = decode(model, tokenizer, sources, settings, "transformers", tmp_path / "cache", batch_size=8)
    assert decode(model, tokenizer, sources, settings, "ctranslate2", tmp_path / "cache", batch_size=8) == expected


def test_decoder_only_ngram_blocking_decodes_with_transformers_under_auto(trained_causal, pairs, tmp_path):
    """transformers bans the prompt's n-grams too, CTranslate2 cannot (29/60 and 11/60 outputs equal for the tiny
    GPT-2 and Llama, size 2): auto decodes as generate does, with transformers, and says why; an explicit
    ctranslate2 is refused."""
    from textbox.config import TextBoxUserError
    from textbox.decoding.engine import choose_engine
    from tests.unit.decoding.engines import decode, generate_alone

    model, tokenizer = trained_causal
    sources = [source for source, _ in pairs[:60]]
    settings = {"no_repeat_ngram_size": 2, "max_new_tokens": 16}
    assert decode(model, tokenizer, sources, settings, "auto", tmp_path) == \
        generate_alone(model, tokenizer, sources, settings)
    choice = choose_engine(model, settings, "test", DecodingOptions("auto"))
    assert choice.name == "transformers" and "no_repeat_ngram_size=2 on a decoder-only model" in choice.reason
    with pytest.raises(TextBoxUserError, match="--decoding_backend=ctranslate2: no_repeat_ngram_size=2 on a "
                                               "decoder-only model"):
        choose_engine(model, settings, "test", DecodingOptions("ctranslate2"))


def test_a_model_the_converter_fails_on_decodes_with_transformers_under_auto(tmp_path, caplog):
    """CTranslate2's OPT converter wants a vocabulary that is a multiple of 8 (a resized one need not be): auto
    used to crash with the converter's ValueError after training; it decodes with transformers and says why."""
    import logging

    import torch
    from transformers import OPTConfig, OPTForCausalLM

    from textbox.config import TextBoxUserError
    from tests.unit.decoding.engines import decode

    tokenizer = causal_tokenizer(SOURCES * 3, tmp_path / "tok", "gpt2")
    tokenizer.pad_token = tokenizer.eos_token
    torch.manual_seed(0)
    model = OPTForCausalLM(OPTConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, ffn_dim=64,
                                     num_attention_heads=2, max_position_embeddings=64, word_embed_proj_dim=32,
                                     pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                                     eos_token_id=tokenizer.eos_token_id)).eval()
    assert model.config.vocab_size % 8  # 300 tokens
    settings = {"max_new_tokens": 6}
    with caplog.at_level(logging.INFO):
        ours = decode(model, tokenizer, SOURCES, settings, "auto", tmp_path / "cache")
    assert ours == decode(model, tokenizer, SOURCES, settings, "transformers", tmp_path / "cache")
    assert "decoding with transformers: --decoding_backend=auto: CTranslate2's converter cannot convert this " \
           "'opt' model (ValueError: " in caplog.text
    with pytest.raises(TextBoxUserError, match="--decoding_backend=ctranslate2: CTranslate2's converter cannot"):
        decode(model, tokenizer, SOURCES, settings, "ctranslate2", tmp_path / "cache")


@pytest.mark.parametrize("settings", [{"num_beams": 4, "length_penalty": 0.0},
                                      {"num_beams": 4, "early_stopping": True, "num_return_sequences": 4}])
def test_decoder_only_beam_search_over_prompts_of_different_lengths(trained_causal, pairs, settings, tmp_path):
    """In one call per batch the longer prompts' tails were a forced prefix, after which CTranslate2 lets no beam
    but the best end (the tiny GPT-2: 53/60 outputs equal at length_penalty 0)."""
    from tests.unit.decoding.engines import decode

    model, tokenizer = trained_causal
    sources = [source for source, _ in pairs[:60]]
    settings = {**settings, "max_new_tokens": 16}
    expected = decode(model, tokenizer, sources, settings, "transformers", tmp_path)
    assert decode(model, tokenizer, sources, settings, "ctranslate2", tmp_path) == expected


def test_prompts_sharing_a_start_decode_alike_with_it_as_a_static_prompt(trained_causal, pairs, tmp_path, monkeypatch):
    """A few-shot evaluation's prompts share their demonstrations: CTranslate2 is handed those tokens once
    (static_prompt, its state kept for the next calls that start alike), with generate's outputs (greedy) and the
    outputs of the whole prompts (beam search)."""
    from textbox.decoding import ctranslate2_calls
    from tests.unit.decoding.engines import decode

    model, tokenizer = trained_causal
    shared = " ".join(source for source, _ in pairs[60:64])  # a start every prompt shares, as demonstrations are
    sources = [f"{shared} {source}" for source, _ in pairs[:12]]
    greedy, beams = {"max_new_tokens": 16}, {"max_new_tokens": 16, "num_beams": 4}
    expected = decode(model, tokenizer, sources, greedy, "transformers", tmp_path)
    monkeypatch.setattr(ctranslate2_calls, "SHARED_PREFIX_MINIMUM", 10**9)  # whole prompts
    whole = decode(model, tokenizer, sources, beams, "ctranslate2", tmp_path)
    monkeypatch.undo()
    given: list[int] = []
    real = ctranslate2_calls.shared_prefix
    monkeypatch.setattr(ctranslate2_calls, "shared_prefix", lambda prompts: given.append(len(real(prompts))) or
                        real(prompts))
    assert decode(model, tokenizer, sources, greedy, "ctranslate2", tmp_path) == expected
    assert decode(model, tokenizer, sources, beams, "ctranslate2", tmp_path) == whole
    assert given and min(given) >= ctranslate2_calls.SHARED_PREFIX_MINIMUM  # every call took the static prompt


def test_the_shared_prefix_leaves_each_prompt_two_tokens_of_its_own():
    from textbox.decoding.ctranslate2_calls import shared_prefix

    assert shared_prefix([list("abcdefgh"), list("abcdexyz")]) == list("abcde")
    assert shared_prefix([list("abcd"), list("abcdef")]) == list("ab")  # the shortest keeps "cd"
    assert shared_prefix([list("abc")]) == list("a") and shared_prefix([]) == []
