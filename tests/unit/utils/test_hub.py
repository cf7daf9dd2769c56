"""--push_to_hub is refused before anything runs when it could not push (offline, no token, a bad repository id,
nothing trained), and a push key without --push_to_hub is refused rather than ignored; the push itself goes through
HfApi.create_repo and upload_folder (tests/integration/test_checkpoint_sharing.py checks what a run passes them)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import one_problem, problems


@pytest.fixture
def online_with_token(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")


def test_offline_mode_refuses_a_push_up_front(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "HF_HUB_OFFLINE=1 forbids network access" in one_problem("--push_to_hub=True")
    found = problems("--push_to_hub=True", "--do_train=False")
    assert any("push_to_hub=True needs do_train=True" in problem for problem in found), found


def test_no_token_refuses_a_push_up_front(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)  # whatever token file this machine holds
    assert "no Hugging Face token is set" in one_problem("--push_to_hub=True")


def test_a_push_that_can_push_is_accepted_and_a_bad_repo_id_named(online_with_token):
    assert problems("--push_to_hub=True", "--hub_model_id=me/copy-model", "--hub_private=True") == []
    assert "hub_model_id='me/two/slashes' is not a hub repository id" in one_problem(
        "--push_to_hub=True", "--hub_model_id=me/two/slashes")


def test_push_keys_without_push_to_hub_are_refused():
    assert "hub_model_id is set but push_to_hub is not" in one_problem("--hub_model_id=me/copy-model")
    assert "hub_private is set but push_to_hub is not" in one_problem("--hub_private=True")


def test_a_push_of_a_run_that_keeps_no_checkpoint_is_refused(online_with_token):
    """--max_save=0 removes checkpoint_best once the run is tested; the push comes after: refused before training."""
    assert "uploads checkpoint_best, which --max_save=0 removes" in one_problem("--push_to_hub=True", "--max_save=0")
    assert problems("--push_to_hub=True", "--max_save=1") == []
