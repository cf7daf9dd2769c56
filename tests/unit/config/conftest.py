"""Fixtures shared by the config tests."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A minimal plain dataset directory so that the dataset check passes."""
    path = tmp_path / "toy"
    path.mkdir()
    for split in ("train", "valid", "test"):
        (path / f"{split}.src").write_text("a b\n")
        (path / f"{split}.tgt").write_text("c d\n")
    return path
