"""Run directories as run_textbox.py leaves them (config.yaml, generation.txt), made without training."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from textbox.config import load_config


def write_dataset(directory: Path, sources: Sequence[str], targets: Sequence[str]) -> Path:
    """A plain dataset holding only the test split (all the analysis reads)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "test.src").write_text("".join(f"{line}\n" for line in sources), encoding="utf-8")
    (directory / "test.tgt").write_text("".join(f"{line}\n" for line in targets), encoding="utf-8")
    return directory


def write_run(run_dir: Path, data_path: Path | str, hypotheses: Sequence[str], **settings: Any) -> Path:
    """config.yaml of a validated config for ``data_path`` (plus ``settings``) and the given generation.txt."""
    config = load_config([], overrides={"data_path": str(data_path), **settings})
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(config.to_yaml(), encoding="utf-8")
    (run_dir / "generation.txt").write_text("".join(f"{line}\n" for line in hypotheses), encoding="utf-8")
    return run_dir
