"""Decoding chat-templated prompts (textbox.data.chat): a run's batches give what ``model.generate`` gives on each
rendered prompt alone, and CTranslate2 (which auto picks for Qwen2 and Llama) gives the same (tiny random models:
every output runs to the length bound)."""
from __future__ import annotations

import pytest
import torch

from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.chat import Layout, encode_examples
from textbox.data.collate import CausalLMCollator
from textbox.decoding.detokenize import one_line
from textbox.decoding.engine import DecodingOptions, EngineChoices, choose_engine
from textbox.decoding.generate import generate_texts
from tests.chat_helpers import chat_tokenizer, tiny_chat_model
from tests.unit.decoding.conftest import SOURCES

SETTINGS = {"max_new_tokens": 6}


@pytest.mark.parametrize("style", ["qwen2", "llama3"])
def test_templated_prompts_decode_as_generate_alone_on_both_engines(style, tmp_path):
    from accelerate import Accelerator

    from textbox.evaluator.evaluator import Evaluator

    tokenizer = chat_tokenizer(SOURCES * 3, tmp_path / "tok", style)
    model = tiny_chat_model(style, tokenizer, seed=1).eval()
    data = encode_examples(tokenizer, SOURCES, ["a"] * len(SOURCES), None, Layout(system_prompt="be brief"), 100,
                           8, "tail")
    examples = [dict(zip(data, values)) for values in zip(*data.values())]
    evaluator = Evaluator(Config({**DEFAULTS, "eval_batch_size": 4}), Accelerator(cpu=True), tokenizer,
                          CausalLMCollator(tokenizer, templated=True))
    expected = []
    with torch.no_grad():
        for source in SOURCES:
            ids = tokenizer.apply_chat_template([{"role": "system", "content": "be brief"},
                                                 {"role": "user", "content": source}], add_generation_prompt=True,
                                                return_tensors="pt", return_dict=True)
            output = model.generate(**ids, **SETTINGS)[:, ids["input_ids"].shape[1]:]
            expected.append(one_line(tokenizer.decode(output[0], skip_special_tokens=True)))
    assert any(expected)
    assert choose_engine(model, SETTINGS, "test", DecodingOptions("auto"), tokenizer,
                         EngineChoices(keeps_failures=False)).name == "ctranslate2"
    for backend in ("transformers", "ctranslate2"):
        texts = generate_texts(evaluator.accelerator, model, tokenizer, evaluator.loader(examples), dict(SETTINGS),
                               "test", DecodingOptions(backend, "float32", str(tmp_path / "cache"), 0))
        assert texts == expected, backend
