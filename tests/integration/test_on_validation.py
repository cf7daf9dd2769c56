"""run(config, on_validation=...): the callable hears of every validation, with its optimiser step and the figures
that metrics.jsonl records and that results.json's "valid" takes from the best one (what a study reports to Ray
Tune after each validation)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from textbox.config import load_config
from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset

pytestmark = pytest.mark.slow


def test_on_validation_is_called_after_each_validation_with_its_figures(tmp_path: Path, monkeypatch,
                                                                        fresh_accelerate_state):
    from textbox.pipeline import run

    monkeypatch.chdir(tmp_path)
    data = make_copy_dataset(tmp_path / "copy", {"train": 48, "valid": 8, "test": 4})
    config = load_config([*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--max_steps=6",
                          "--valid_strategy=step", "--valid_steps=2", "--metrics=['bleu']",
                          "--metrics_for_best_model=['bleu','loss']", f"--saved_dir={tmp_path}", "--filename=run"])
    heard: list[tuple[int, dict[str, float]]] = []
    results = run(config, on_validation=lambda step, figures: heard.append((step, figures)))

    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    recorded = [(row["step"], {k: v for k, v in row.items() if k not in ("split", "step")})
                for row in rows if row["split"] == "valid"]
    assert [step for step, _ in heard] == [2, 4, 6]
    assert heard == recorded
    assert all(isinstance(step, int) and {"loss", "bleu"} <= set(figures) for step, figures in heard)
    assert dict(heard)[results["best_step"]] == results["valid"]
