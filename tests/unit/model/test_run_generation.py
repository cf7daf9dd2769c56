"""The run's generation settings in its checkpoints' generation_config.json (only GenerationConfig's fields, so both
engines read it), what they replaced beside it (textbox_generation.json), put back when a later run loads the
checkpoint from its run directory (so that a test's own generation_kwargs replace the tested run's whole)."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from transformers import GenerationConfig

from textbox.config import TextBoxUserError
from textbox.decoding.ctranslate2_settings import unsupported_settings
from textbox.model.run_generation import (RUN_GENERATION_FILE, record_run_generation, restore_run_generation,
                                          save_run_generation)


def _checkpoint(tmp_path: Path, settings: dict) -> tuple[Path, SimpleNamespace]:
    run = tmp_path / "saved" / "run"
    (run / "checkpoint_best").mkdir(parents=True)
    (run / "config.yaml").write_text("model: bart\n")
    model = SimpleNamespace(generation_config=GenerationConfig(num_beams=4, max_new_tokens=9, length_penalty=2.0))
    logged: list[str] = []
    record_run_generation(model, settings, logged.append)
    assert logged == []
    model.generation_config.save_pretrained(run / "checkpoint_best")
    save_run_generation(model, run / "checkpoint_best")
    return run / "checkpoint_best", model


def test_the_saved_settings_are_the_runs_and_a_later_run_puts_back_what_they_replaced(tmp_path: Path):
    best, _ = _checkpoint(tmp_path, {"num_beams": 3, "early_stopping": True, "max_new_tokens": 16})
    saved = GenerationConfig.from_pretrained(best)
    assert (saved.num_beams, saved.early_stopping, saved.max_new_tokens, saved.length_penalty) == (3, True, 16, 2.0)
    # only GenerationConfig's own fields: CTranslate2's mapping finds nothing it does not know
    assert set(json.loads((best / "generation_config.json").read_text())) <= set(GenerationConfig().to_dict())
    assert unsupported_settings({}, saved) == []
    assert json.loads((best / RUN_GENERATION_FILE).read_text()) == {"replaced": {"num_beams": 4, "early_stopping": None,
                                                                                 "max_new_tokens": 9}}
    loaded = SimpleNamespace(generation_config=GenerationConfig.from_pretrained(best, max_new_tokens=12))
    assert restore_run_generation(loaded, str(best))  # a test of that checkpoint with generation_kwargs of its own
    settings = loaded.generation_config
    # max_new_tokens is the later run's own tgt_len, set by its builder: left alone
    assert (settings.num_beams, settings.early_stopping, settings.max_new_tokens) == (4, None, 12)


def test_a_checkpoint_out_of_its_run_directory_keeps_the_runs_settings(tmp_path: Path):
    best, _ = _checkpoint(tmp_path, {"num_beams": 3})
    shared = tmp_path / "shared"
    best.rename(shared)
    loaded = SimpleNamespace(generation_config=GenerationConfig.from_pretrained(shared))
    assert not restore_run_generation(loaded, str(shared)) and loaded.generation_config.num_beams == 3


def test_recording_twice_keeps_the_first_values(tmp_path: Path):
    model = SimpleNamespace(generation_config=GenerationConfig(num_beams=4))
    record_run_generation(model, {"num_beams": 3}, print)
    record_run_generation(model, {"num_beams": 2}, print)
    save_run_generation(model, tmp_path)
    assert json.loads((tmp_path / RUN_GENERATION_FILE).read_text())["replaced"] == {"num_beams": 4}


def test_settings_transformers_would_refuse_to_save_are_left_out_with_a_warning(tmp_path: Path):
    model = SimpleNamespace(generation_config=GenerationConfig(max_new_tokens=9))
    logged: list[str] = []
    record_run_generation(model, {"early_stopping": True}, logged.append)  # one beam: transformers refuses to save
    assert model.generation_config.early_stopping is None
    save_run_generation(model, tmp_path)
    assert not (tmp_path / RUN_GENERATION_FILE).exists()
    assert logged and "not written into the checkpoints' generation_config.json" in logged[0]


def test_a_damaged_record_is_named(tmp_path: Path):
    best, _ = _checkpoint(tmp_path, {"num_beams": 3})
    (best / RUN_GENERATION_FILE).write_text("{")
    with pytest.raises(TextBoxUserError, match=RUN_GENERATION_FILE):
        restore_run_generation(SimpleNamespace(generation_config=GenerationConfig()), str(best))
