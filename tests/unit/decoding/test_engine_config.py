"""--decoding_backend / --decoding_precision at config time: what CTranslate2 cannot do is refused before
anything is built when it was asked for explicitly, with one message naming the key and what to do."""
from __future__ import annotations

import pytest

from textbox.checks import load_checked_config
from textbox.config import ConfigError
from textbox.decoding import engine
from tests.helpers import make_copy_dataset


@pytest.fixture
def data(tmp_path):
    return str(make_copy_dataset(tmp_path / "data"))


def _problems(data, **overrides):
    with pytest.raises(ConfigError) as error:
        load_checked_config([], {"dataset": "copy", "data_path": data, **overrides})
    return str(error.value)


def test_explicit_ctranslate2_refuses_what_it_cannot_run(data):
    assert "--model=gru is an RNN" in _problems(data, decoding_backend="ctranslate2", model="gru")
    message = _problems(data, decoding_backend="ctranslate2", generation_kwargs={"repetition_penalty": 1.2})
    assert "decoding_backend" in message and "repetition_penalty=1.2" in message
    assert "--decoding_backend=auto" in message
    assert "no CTranslate2 equal" in _problems(data, decoding_backend="ctranslate2",
                                               generation_kwargs={"diversity_penalty": 0.5})


def test_explicit_ctranslate2_refuses_settings_it_cannot_run_on_the_models_kind(data, tmp_path):
    """Known before anything is built from the model family: decoder-only n-gram blocking (the prompt's n-grams),
    beam search after a forced first token."""
    from tests.causal_helpers import save_tiny_causal_lm
    from tests.unit.decoding.conftest import SOURCES

    gpt2 = save_tiny_causal_lm(tmp_path / "gpt2", SOURCES, "gpt2", tmp_path / "tok")
    message = _problems(data, decoding_backend="ctranslate2", model="gpt2", model_path=str(gpt2),
                        generation_kwargs={"no_repeat_ngram_size": 3})
    assert "no_repeat_ngram_size=3 on a decoder-only model" in message
    load_checked_config([], {"dataset": "copy", "data_path": data, "decoding_backend": "ctranslate2",
                             "generation_kwargs": {"no_repeat_ngram_size": 3}})  # greedy BART maps it
    message = _problems(data, decoding_backend="ctranslate2", generation_kwargs={"num_beams": 4, "early_stopping": True,
                                                                                 "forced_bos_token_id": 5})
    assert "forced_bos_token_id=5 with num_beams=4" in message


def test_retired_decode_compile_is_refused_for_every_backend(data):
    for backend in ("auto", "ctranslate2", "transformers"):
        assert "--decode_compile=True: compiled decoding was retired" in _problems(data, decoding_backend=backend,
                                                                                   decode_compile=True)


def test_precision_checks(data):
    assert "float16 runs on CUDA only" in _problems(data, decoding_precision="float16")
    assert "never uses it" in _problems(data, decoding_backend="transformers", decoding_precision="int8")
    import ctranslate2

    if "bfloat16" not in ctranslate2.get_supported_compute_types("cpu") and not ctranslate2.get_cuda_device_count():
        assert "bfloat16 is not supported by CTranslate2" in _problems(data, decoding_precision="bfloat16")


def test_a_valid_config_gives_the_run_options_and_auto_accepts_anything(data):
    config = load_checked_config([], {"dataset": "copy", "data_path": data, "decoding_precision": "int8",
                                      "model": "gru", "generation_kwargs": {"repetition_penalty": 1.2}, "seed": 7})
    assert engine.DecodingOptions.from_values(config) == engine.DecodingOptions("auto", "int8", ".cache/textbox", 7)
