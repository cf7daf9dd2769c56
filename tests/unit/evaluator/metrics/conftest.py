"""A Punkt sentence model NLTK can load offline (its English model is data that cannot be downloaded here)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def punkt_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tokenizers/punkt_tab/english with no learned parameters but two abbreviations (mr, u.s), on NLTK's data path."""
    import nltk

    model = tmp_path / "tokenizers" / "punkt_tab" / "english"
    model.mkdir(parents=True)
    for name in ("collocations.tab", "sent_starters.txt", "ortho_context.tab"):
        (model / name).write_text("")
    (model / "abbrev_types.txt").write_text("mr\nu.s\n")
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])
    return model
