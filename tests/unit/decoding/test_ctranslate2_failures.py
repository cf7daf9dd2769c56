"""When CTranslate2 cannot decode a model: a tokenizer without bos/eos strings (a BERT tokenizer with a BART or GPT-2
config) converts with the end token generate stops at; a conversion, load or translation that fails falls back to
transformers under auto with one log line naming why (and the run's later decodes of that kind stay there), and
stops an explicit ctranslate2 with the reason."""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from tests.bert_vocab_helpers import bert_tokenizer, save_bert_vocab_checkpoint
from tests.unit.decoding.conftest import SOURCES
from tests.unit.decoding.engines import evaluator, examples
from textbox.config import TextBoxUserError
from textbox.decoding.engine import DecodingOptions, EngineChoices, choose_engine
from textbox.decoding.generate import generate_sequences


def _decode(model, tokenizer, backend: str, cache: Path, description: str = "test",
            choices: EngineChoices | None = None) -> list[str]:
    built = evaluator(model, tokenizer)
    loader = built.loader(examples(model, tokenizer, SOURCES))
    sequences = generate_sequences(built.accelerator, model, tokenizer, loader, {"max_new_tokens": 8}, description,
                                   DecodingOptions(backend, "float32", str(cache), 0), choices)
    return [texts[0] for texts in sequences]


@pytest.mark.parametrize("family", ["bart", "gpt2"])
def test_a_bert_tokenizer_model_converts_with_the_end_token_generate_stops_at(family, tmp_path):
    """The converter wrote the tokenizer's missing bos/eos as null and CTranslate2 refused to load it ("type must
    be string, but is null": the run failed after training). Built as a run builds it, the model now decodes on
    CTranslate2 under auto, as transformers does, stopping at the token the model's generation config names."""
    from textbox.config.loader import Config
    from textbox.config.schema import DEFAULTS
    from textbox.model.build import build_model

    checkpoint = save_bert_vocab_checkpoint(tmp_path / "checkpoint", family)
    built = build_model(Config({**DEFAULTS, "model": family, "model_path": str(checkpoint), "tokenizer_kwargs": {},
                                "config_kwargs": {}, "src_len": 24, "tgt_len": 8}), None)
    model, tokenizer = built.model, built.tokenizer
    assert tokenizer.bos_token is None and (family == "gpt2" or tokenizer.eos_token is None)
    assert choose_engine(model, {}, "test", DecodingOptions("auto"), tokenizer).name == "ctranslate2"
    ours = _decode(model, tokenizer, "auto", tmp_path / "cache")
    assert ours == _decode(model, tokenizer, "transformers", tmp_path / "cache") and all(ours)
    (converted,) = (tmp_path / "cache" / "ctranslate2").glob("[0-9a-f]*")
    config = json.loads((converted / "config.json").read_text())
    assert config["eos_token"] == "[SEP]" and config["bos_token"] == "[CLS]" and config["unk_token"] == "[UNK]"


def test_a_model_without_any_end_token_is_left_to_transformers_up_front(tmp_path):
    """No eos in the tokenizer nor in the model's configs: nothing for CTranslate2 to stop at. auto says so when the
    engine is chosen (before training, in a run), an explicit ctranslate2 is refused."""
    from tests.bert_vocab_helpers import bert_vocab_model

    tokenizer = bert_tokenizer()
    model = bert_vocab_model("gpt2", tokenizer)
    model.config.eos_token_id = model.generation_config.eos_token_id = None
    choice = choose_engine(model, {}, "test", DecodingOptions("auto"), tokenizer)
    assert choice.name == "transformers" and "neither its tokenizer nor its generation config names an " \
                                              "end-of-sequence token" in choice.reason
    with pytest.raises(TextBoxUserError, match="--decoding_backend=ctranslate2: this 'gpt2' model cannot be "
                                               "converted: neither its tokenizer"):
        choose_engine(model, {}, "test", DecodingOptions("ctranslate2"), tokenizer)


class _FailingTranslator:
    """A loaded Translator whose translations fail (as one out of memory would)."""

    def translate_batch(self, *args, **kwargs):
        raise RuntimeError("out of memory")


@pytest.mark.parametrize("failure, why", [
    ("load", "CTranslate2 could not load the converted model .* \\(RuntimeError: \\[json.exception.type_error.302\\] "
             "type must be string, but is null\\)"),
    ("translation", "CTranslate2 failed while decoding \\(RuntimeError: out of memory\\)"),
])
def test_a_failing_ctranslate2_falls_back_under_auto_and_stops_an_explicit_ctranslate2(
        trained, tmp_path, monkeypatch, caplog, failure, why):
    """The failure used to end the run (an unexpected error after training, its test pass lost). Under auto the
    decode is done by transformers, with one log line naming why; the run's later validations stay on transformers
    (their figures are compared with each other) without another line; its test pass tries CTranslate2 again, and
    that switch is logged too."""
    from textbox.decoding import ctranslate2_engine

    model, tokenizer = trained
    expected = _decode(model, tokenizer, "transformers", tmp_path / "cache")
    real_load = ctranslate2_engine.load_engine

    def failing_load(*args, **kwargs):
        if failure == "load":
            raise RuntimeError("[json.exception.type_error.302] type must be string, but is null")
        return _FailingTranslator()

    monkeypatch.setattr(ctranslate2_engine, "load_engine", failing_load)
    choices = EngineChoices()
    caplog.clear()  # the reference decode's own line, where an earlier test left the logger at INFO
    with caplog.at_level(logging.INFO):
        assert _decode(model, tokenizer, "auto", tmp_path / "cache", "valid", choices) == expected
    lines = [record.getMessage() for record in caplog.records if "decoding with" in record.getMessage()]
    assert len(lines) == 2 and lines[0].startswith("decoding with ctranslate2"), lines
    assert lines[1].startswith("decoding with transformers: --decoding_backend=auto: ")
    assert re.search(why, lines[1]) and lines[1].endswith("this run's later valid decodes stay on transformers")

    monkeypatch.setattr(ctranslate2_engine, "load_engine", real_load)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert _decode(model, tokenizer, "auto", tmp_path / "cache", "valid", choices) == expected
        assert "decoding with" not in caplog.text  # the same engine as the line above says
        assert _decode(model, tokenizer, "auto", tmp_path / "cache", "test", choices) == expected
    assert "decoding with ctranslate2: --decoding_backend=auto: bart converts" in caplog.text

    monkeypatch.setattr(ctranslate2_engine, "load_engine", failing_load)
    with pytest.raises(TextBoxUserError, match=f"--decoding_backend=ctranslate2: {why}; use --decoding_backend=auto"):
        _decode(model, tokenizer, "ctranslate2", tmp_path / "cache", "valid", EngineChoices())
