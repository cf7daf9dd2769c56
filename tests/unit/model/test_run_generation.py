"""The run's generation settings in its checkpoints' generation_config.json, and put back when a later run loads
the checkpoint (so that a test's own generation_kwargs replace the tested run's whole, as before)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from transformers import GenerationConfig

from textbox.model.run_generation import REPLACED, record_run_generation, restore_model_generation


def test_recorded_settings_are_saved_and_a_later_run_puts_back_what_they_replaced(tmp_path: Path):
    model = SimpleNamespace(generation_config=GenerationConfig(num_beams=4, max_new_tokens=9))
    logged: list[str] = []
    record_run_generation(model, {"num_beams": 3, "no_repeat_ngram_size": 2, "max_new_tokens": 16}, logged.append)
    model.generation_config.save_pretrained(tmp_path)
    loaded = SimpleNamespace(generation_config=GenerationConfig.from_pretrained(tmp_path))
    assert (loaded.generation_config.num_beams, loaded.generation_config.no_repeat_ngram_size) == (3, 2)
    restore_model_generation(loaded)  # a test of that checkpoint with generation_kwargs of its own
    settings = loaded.generation_config
    assert (settings.num_beams, settings.no_repeat_ngram_size, settings.max_new_tokens) == (4, None, 9)
    assert not hasattr(settings, REPLACED) and logged == []


def test_settings_transformers_would_refuse_to_save_are_left_out_with_a_warning():
    model = SimpleNamespace(generation_config=GenerationConfig(max_new_tokens=9))
    logged: list[str] = []
    record_run_generation(model, {"early_stopping": True}, logged.append)  # one beam: transformers refuses to save
    assert model.generation_config.early_stopping is None and not hasattr(model.generation_config, REPLACED)
    assert logged and "not written into the checkpoints' generation_config.json" in logged[0]
