"""Plain helpers of the trainer tests (fixtures live in conftest.py)."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.split import Split
from textbox.evaluator.selection import selection_score
from textbox.trainer.hooks import Validation, ValidationHook

WORDS = "red green blue cat dog bird tree house river stone light dark small big old new".split()
TINY_BART = {"d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2,
             "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "dropout": 0.0,
             "attention_dropout": 0.0, "activation_dropout": 0.0, "max_position_embeddings": 32}


def reverse_words_split(count: int, seed: int) -> Split:
    """Sources of 2-6 words, targets the same words reversed: sequences of varied lengths."""
    rng = random.Random(seed)
    sources = [" ".join(rng.choices(WORDS, k=rng.randint(2, 6))) for _ in range(count)]
    return Split("train", sources, [[" ".join(reversed(source.split()))] for source in sources])


def trainer_config(**changes: Any) -> Config:
    """A Config for the tiny in-process runs: no tracker, log every step, small batches, no clipping."""
    values = {**DEFAULTS, "tracker": "none", "train_batch_size": 4, "eval_batch_size": 8, "logging_steps": 1,
              "learning_rate": 1e-3, "epochs": 1, "grad_clip": None, "src_len": 16, "tgt_len": 16}
    return Config({**values, **changes})


def metric_rows(run_dir: Path, split: str) -> list[dict[str, Any]]:
    return [row for row in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
            if row["split"] == split]


class ScriptedValidation(ValidationHook):
    """Returns these figures in turn, so that the choice of the best model is known in advance. The selection value
    is the signed sum of ``names`` as the pipeline computes it, or with ``minimise`` the first figure itself, lower
    is better. ``notices`` records the trainer's calls of new_best and validated."""

    def __init__(self, figures: list[dict[str, float]], names: list[str] | None = None, minimise: bool = False):
        self.queue = iter(figures)
        self.names = names or ["loss"]
        self.minimise = minimise
        self.notices: list[tuple[str, int | None, dict[str, float]]] = []

    def validate(self, model: Any) -> Validation:
        figures = dict(next(self.queue))
        if self.minimise:
            return Validation(figures, figures[self.names[0]], higher_is_better=False)
        return Validation(figures, selection_score(figures, self.names))

    def new_best(self, validation: Validation) -> None:
        self.notices.append(("best", None, dict(validation.figures)))

    def validated(self, step: int, validation: Validation) -> None:
        self.notices.append(("validated", step, dict(validation.figures)))
