"""--decode_compile=True: a static cache and a compiled forward give exactly the eager outputs, through the
framework's own evaluation loop, and the compile time is logged apart; beam search, which transformers never
compiles, is refused rather than given a flag that does nothing."""
from __future__ import annotations

import logging

import pytest

from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.collate import Seq2SeqCollator
from textbox.evaluator.generate import generate_texts
from textbox.evaluator.evaluator import Evaluator
from tests.unit.decoding.conftest import SOURCES

pytestmark = pytest.mark.slow  # one compilation: ~40 s on one CPU core


def test_compiled_decoding_gives_the_eager_outputs(tiny_bart, tokenizer, tmp_path, caplog):
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    evaluators = {compiled: Evaluator(Config({**DEFAULTS, "eval_batch_size": 8, "decode_compile": compiled}),
                                      accelerator, tokenizer, Seq2SeqCollator(tokenizer.pad_token_id),
                                      tiny_bart.generation_config)
                  for compiled in (False, True)}
    assert evaluators[True].generation["cache_implementation"] == "static"
    data = [{"input_ids": ids, "labels": []} for ids in tokenizer(SOURCES)["input_ids"]]
    for settings in ({"num_beams": 1, "min_new_tokens": 6}, {"num_beams": 1, "min_new_tokens": 3}):
        texts = {}
        for compiled, evaluator in evaluators.items():
            with caplog.at_level(logging.INFO, logger="textbox"):
                texts[compiled] = generate_texts(accelerator, tiny_bart, tokenizer, evaluator.loader(data),
                                                 {**evaluator.generation, **settings, "max_new_tokens": 10}, "test")
        assert texts[True] == texts[False]
    compiled_seconds = [float(line.split()[1]) for line in caplog.messages if line.startswith("decode_compile:")]
    assert compiled_seconds and compiled_seconds[0] > 0  # it really compiled, and said for how long


def test_beam_search_is_refused_before_anything_runs():
    from transformers import GenerationConfig

    from textbox.config import TextBoxUserError
    from textbox.decoding.compiled import with_compiled_decoding

    with pytest.raises(TextBoxUserError, match="num_beams=4"):
        with_compiled_decoding({"num_beams": 4})
    with pytest.raises(TextBoxUserError, match="num_beams=3"):  # the model's own default counts too
        with_compiled_decoding({}, GenerationConfig(num_beams=3))
    assert with_compiled_decoding({"num_beams": 1}, GenerationConfig(num_beams=3))["cache_implementation"] == "static"
