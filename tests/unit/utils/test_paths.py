"""One path-or-hub-id test for every layer: a value that can only mean a local directory and does not exist is
the user's mistake, with ``~`` expanded everywhere (config validation once said an existing ~/dir did not exist)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import make_toy_dataset
from textbox.checks import load_checked_config
from textbox.config import ConfigError
from textbox.utils.paths import looks_like_a_path, missing_local_path


@pytest.mark.parametrize("value, local", [
    ("facebook/bart-base", False), ("t5-small", False), ("./ckpt", True), ("/abs/ckpt", True), ("~/ckpt", True),
    ("saved/run/checkpoint_best", True), ("../up", True), (Path("relative"), True),
])
def test_hub_ids_are_name_or_owner_slash_name_anything_else_is_a_path(value, local):
    assert looks_like_a_path(value) is local


def test_missing_expands_the_home_directory(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ckpt").mkdir()
    assert not missing_local_path("~/ckpt") and missing_local_path("~/nothing")
    assert not missing_local_path("owner/name")  # a hub id is never "missing": loading tries the hub


def test_a_checkpoint_under_home_is_found_by_validation_too(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps({"model_type": "bart", "is_encoder_decoder": True}))
    data = make_toy_dataset(tmp_path / "toy")
    config = load_checked_config([f"--data_path={data}", "--model_path=~/ckpt"])
    assert config.model == "bart"
    with pytest.raises(ConfigError, match="--model_path: directory ~/gone does not exist"):
        load_checked_config([f"--data_path={data}", "--model=bart", "--model_path=~/gone"])
