"""The trainer's figures on their way out: metrics.jsonl (always) and the configured tracker, plus the throughput
window behind the training log lines; strict JSON numbers for it and for the pipeline's results.json."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Callable, Mapping

from accelerate import Accelerator

METRICS_FILE = "metrics.jsonl"


def record(accelerator: Accelerator, run_dir: Path, step: int, row: Mapping[str, object], prefix: str) -> None:
    """One row (``split`` = prefix) to metrics.jsonl on the main process, and to the tracker under ``prefix/``.
    NaN/inf are written as null, so that the file stays strict JSON."""
    accelerator.log({f"{prefix}/{k}": v for k, v in row.items() if k != "step"}, step=step)
    if accelerator.is_main_process:
        with open(Path(run_dir) / METRICS_FILE, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(finite_or_null({"split": prefix, **row}), allow_nan=False) + "\n")


def finite_or_null(value: object) -> object:
    """The same nested dicts/lists with every NaN/inf float replaced by None. NaN and inf (a diverged model's loss
    or perplexity) are not JSON: json.dumps would write the bare words NaN/Infinity that strict readers (jq,
    JavaScript, pandas' default) reject. The log and the metric details say what the value was."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(item) for item in value]
    return value


class ThroughputWindow:
    """Loss sums and counts since the last log line, for this process (flush sums them over processes)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.start = time.perf_counter()
        self.loss_sum = 0.0
        self.tokens = 0
        self.examples = 0
        self.steps = 0

    def add(self, loss_sum: float, tokens: int, examples: int) -> None:
        """One optimiser step's figures."""
        self.loss_sum += loss_sum
        self.tokens += tokens
        self.examples += examples
        self.steps += 1

    def flush(self, sum_over_processes: Callable[[list[float]], list[float]]) -> dict[str, float]:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        loss_sum, tokens, examples = sum_over_processes([self.loss_sum, self.tokens, self.examples])
        figures = {"loss": loss_sum / max(tokens, 1), "examples_per_s": examples / elapsed,
                   "tokens_per_s": tokens / elapsed, "steps_per_s": self.steps / elapsed}
        self._reset()
        return figures


def duration(seconds: float) -> str:
    """h:mm:ss, for the ETA."""
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
