"""Shared test set-up: offline, quiet, deterministic; paths to the project and ../shared."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATASETS = PROJECT_ROOT.parent / "shared" / "datasets"


@pytest.fixture
def shared_dataset():
    """Path to a dataset in ../shared/datasets; the test is skipped when ../shared is absent."""

    def locate(name: str) -> Path:
        path = SHARED_DATASETS / name
        if not (path / "train.src").is_file():
            pytest.skip(f"../shared/datasets/{name} is not available")
        return path

    return locate
