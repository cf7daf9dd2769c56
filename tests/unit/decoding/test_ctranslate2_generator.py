"""Decoder-only LMs (GPT-2, Llama) on CTranslate2's Generator: the same continuations as transformers' generate
from the left-padded prompts (tiny random models: every output runs to the length bound)."""
from __future__ import annotations


import pytest

from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.causal import CausalLMCollator
from textbox.decoding.engine import DecodingOptions
from textbox.evaluator.generate import generate_texts
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
