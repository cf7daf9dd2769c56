"""Damaged checkpoint files get one clear error naming the file (exit 2), never a traceback, and stay unchanged:
found by config validation for --model_path, and by the shared loader for anything loaded later
(e.g. a run's checkpoint_best when testing)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from textbox.config import TextBoxUserError
from textbox.config.errors import ConfigError
from textbox.checks import load_checked_config
from textbox.model.loading import load_saved_model
from textbox.model.files import damaged_files
from textbox.model.loading import from_pretrained


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(4096))


def _cut_json(path: Path) -> None:
    path.write_text(path.read_text()[:20])


DAMAGES: dict[str, tuple[str, Callable[[Path], None]]] = {
    "weights cut in half": ("model.safetensors", _truncate),
    "weights replaced by garbage": ("model.safetensors", _garbage),
    "config.json cut": ("config.json", _cut_json),
    "tokenizer.json cut": ("tokenizer.json", _cut_json),
}


@pytest.fixture(params=list(DAMAGES))
def damaged(request, saved_bart, tmp_path) -> tuple[Path, Path, dict[str, bytes]]:
    """(checkpoint directory, the damaged file, every file's bytes after the damage)."""
    name, damage = DAMAGES[request.param]
    checkpoint = tmp_path / "checkpoint_best"
    shutil.copytree(saved_bart, checkpoint)
    damage(checkpoint / name)
    return checkpoint, checkpoint / name, {p.name: p.read_bytes() for p in checkpoint.iterdir()}


def _unchanged(checkpoint: Path, before: dict[str, bytes]) -> bool:
    return {p.name: p.read_bytes() for p in checkpoint.iterdir()} == before


def test_an_intact_checkpoint_has_no_damaged_file(saved_bart):
    assert damaged_files(saved_bart) == []


def test_validation_names_the_damaged_file_before_anything_is_built(damaged):
    checkpoint, file, before = damaged
    with pytest.raises(ConfigError) as error:
        load_checked_config(["--model=bart", f"--model_path={checkpoint}"])
    assert len(error.value.problems) == 1
    assert f"--model_path: file {file} is damaged" in error.value.problems[0]
    assert "restore it from a copy" in error.value.problems[0]
    assert _unchanged(checkpoint, before)


def test_the_loader_names_the_damaged_file(damaged):
    checkpoint, file, before = damaged
    load = AutoTokenizer.from_pretrained if file.name == "tokenizer.json" else AutoModelForSeq2SeqLM.from_pretrained
    with pytest.raises(TextBoxUserError, match=f"--model_path={checkpoint}: file {file} is damaged"):
        from_pretrained(load, str(checkpoint))
    assert _unchanged(checkpoint, before)


def test_a_damaged_checkpoint_best_is_named_when_loaded_for_testing(damaged, tiny_transformer):
    checkpoint, file, before = damaged
    if file.name == "tokenizer.json":
        pytest.skip("testing reloads the model only; the tokenizer stays the one the run built")
    model, _ = tiny_transformer
    with pytest.raises(TextBoxUserError, match=f"checkpoint {checkpoint}: file {file} is damaged"):
        load_saved_model(checkpoint, model)
    assert _unchanged(checkpoint, before)


def test_damaged_pickled_weights_are_named_by_the_loader(saved_bart, tmp_path):
    checkpoint = tmp_path / "pickled"
    checkpoint.mkdir()
    shutil.copy(saved_bart / "config.json", checkpoint / "config.json")
    model = AutoModelForSeq2SeqLM.from_pretrained(saved_bart)
    torch.save(model.state_dict(), checkpoint / "pytorch_model.bin")
    _truncate(checkpoint / "pytorch_model.bin")
    with pytest.raises(TextBoxUserError, match=f"file {checkpoint / 'pytorch_model.bin'} is damaged"):
        from_pretrained(AutoModelForSeq2SeqLM.from_pretrained, str(checkpoint))


def test_a_damaged_adapter_is_named(saved_bart, tmp_path):
    import json

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(saved_bart)})[:15])
    with pytest.raises(TextBoxUserError, match=f"file {adapter / 'adapter_config.json'} is damaged"):
        from_pretrained(AutoModelForSeq2SeqLM.from_pretrained, str(adapter))


def test_the_damaged_base_model_of_an_adapter_is_named_in_validation(damaged, tmp_path):
    import json

    checkpoint, file, _ = damaged
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(checkpoint)}))
    with pytest.raises(ConfigError, match=f"file {file} is damaged"):
        load_checked_config(["--model=bart", f"--model_path={adapter}", "--do_train=False"])
