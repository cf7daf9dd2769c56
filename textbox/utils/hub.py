"""--push_to_hub: checkpoint_best uploaded to the Hugging Face hub through huggingface_hub (``HfApi.create_repo``,
then ``HfApi.upload_folder``), and what makes it impossible, found before anything runs (``push_problems``):
offline mode, no token, a repository id the hub refuses. huggingface_hub is imported only when a push is asked for
(utils is the lowest layer; --help and config checks stay light).
"""
from __future__ import annotations

import os
from pathlib import Path

_TRUE = ("1", "on", "yes", "true")


def offline() -> bool:
    """HF_HUB_OFFLINE set (read now, not when huggingface_hub was imported)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def push_problems(push: bool, repo_id: str | None, private: bool, trains: bool) -> list[str]:
    """Why a --push_to_hub run could not push (each naming the key and what to do); [] when it can, or when no push
    is asked for and no push key is set."""
    if not push:
        given = [name for name, value in (("hub_model_id", repo_id), ("hub_private", private)) if value]
        return [f"{name} is set but push_to_hub is not: set --push_to_hub=True to upload checkpoint_best, or drop "
                f"{name}" for name in given]
    problems = []
    if not trains:
        problems.append("push_to_hub=True needs do_train=True: only a training run writes the checkpoint_best it "
                        "uploads (upload another run's checkpoint_best with `hf upload <repo id> <dir>`)")
    if offline():
        problems.append("push_to_hub=True, but HF_HUB_OFFLINE=1 forbids network access: unset HF_HUB_OFFLINE or "
                        "drop push_to_hub")
        return problems
    from huggingface_hub import get_token
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if get_token() is None:
        problems.append("push_to_hub=True, but no Hugging Face token is set: log in with `hf auth login` or set "
                        "HF_TOKEN (a token with write access)")
    if repo_id is not None:
        try:
            validate_repo_id(repo_id)
        except HFValidationError as error:
            problems.append(f"hub_model_id={repo_id!r} is not a hub repository id ({str(error).splitlines()[0]})")
    return problems


def push_folder(folder: Path, repo_id: str, private: bool) -> str:
    """Create the model repository ``repo_id`` (an existing one is kept) and upload ``folder`` into it in one
    commit; returns the repository's URL."""
    from huggingface_hub import HfApi

    api = HfApi()
    url = api.create_repo(repo_id, private=private, repo_type="model", exist_ok=True)
    api.upload_folder(repo_id=url.repo_id, folder_path=folder, repo_type="model",
                      commit_message=f"Upload {folder.name} (textbox)")
    return str(url)
