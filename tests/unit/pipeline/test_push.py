"""A failed --push_to_hub upload is one error naming the repository, why, and the command that uploads the finished
run by hand (the run directory complete, not marked failed: the push comes after it is closed)."""
from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from textbox.config import TextBoxError
from textbox.pipeline import recipe


def _run(tmp_path: Path) -> SimpleNamespace:
    config = SimpleNamespace(hub_model_id=None, hub_private=False)
    return SimpleNamespace(run_dir=tmp_path / "saved" / "my-run", config=config, logger=logging.getLogger("t"))


def test_a_failed_upload_says_how_to_upload_by_hand(tmp_path: Path, monkeypatch):
    def refuse(folder, repo_id, private):
        raise OSError("401 Client Error: Unauthorized\nmore lines")

    monkeypatch.setattr(recipe, "push_folder", refuse)
    with pytest.raises(TextBoxError) as raised:
        recipe.push_checkpoint(_run(tmp_path))
    best = (tmp_path / "saved" / "my-run" / "checkpoint_best").absolute()
    assert str(raised.value) == (f"push_to_hub: uploading {best} to the hub repository 'my-run' failed (401 Client "
                                 f"Error: Unauthorized); the run is complete: upload it with `hf upload my-run "
                                 f"{best}`")


def test_the_default_repository_is_the_run_directorys_name(tmp_path: Path, monkeypatch):
    pushed = []
    monkeypatch.setattr(recipe, "push_folder", lambda folder, repo_id, private: pushed.append((repo_id, private))
                        or f"https://huggingface.co/{repo_id}")
    recipe.push_checkpoint(_run(tmp_path))
    assert pushed == [("my-run", False)]
