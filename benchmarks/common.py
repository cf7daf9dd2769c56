"""What the benchmark scripts share: the framework's own config, data and model, step timing taken from the
model's forward calls (the same clock for every framework), FLOP counts, the machine's GEMM peak, and the one
JSON line each script ends with."""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the scripts run as `python benchmarks/<name>.py` from a checkout
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from textbox.checks import load_checked_config  # noqa: E402  (after the path and offline settings)
from textbox.config import Config  # noqa: E402
from textbox.utils.labels import IGNORE_INDEX  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "multi30k_en_de"
CACHE_DIR = REPO / ".cache" / "benchmarks"


def framework_config(data: Path, **overrides: Any) -> Config:
    """The framework's defaults (configs/overall.yaml and the transformer model yaml) for a plain-text dataset."""
    return load_checked_config([], {"dataset": data.name, "data_path": str(data), "cache_dir": str(CACHE_DIR),
                                    "tracker": "none", **overrides})


def prepare_data_and_model(config: Config, splits: tuple[str, ...]) -> tuple[Any, Any, dict[str, Any], dict]:
    """(model, tokenizer, tokenised splits, raw splits) exactly as a run builds them (tokenizer and data cached)."""
    from textbox.data import read_splits, tokenize_splits
    from textbox.model.build import build_model

    quiet = lambda message: None  # noqa: E731
    raw = read_splits(config, ["train", *splits], log=quiet)
    built = build_model(config, raw["train"])
    model, tokenizer = built.model, built.tokenizer
    return model, tokenizer, tokenize_splits(config, raw, tokenizer, quiet), raw


class StepClock:
    """Times steps by the model's forward calls and counts the tokens of the batches a wrapped collator built.

    Both frameworks call the model's forward once per training batch, in the order the collator built the
    batches, so batch i ran from forward i to forward i+1 whatever the framework's prefetching. Each start is read
    on two clocks: wall time, and this process's CPU time (which other work on a busy machine stretches less).
    """

    def __init__(self, model: Any, collator: Callable[[list[dict]], dict]):
        self.collator = collator
        self.starts: list[float] = []
        self.cpu_starts: list[float] = []
        self.batches: list[dict[str, int]] = []
        self._hook = model.register_forward_pre_hook(lambda module, args: self._start())

    def _start(self) -> None:
        self.starts.append(time.perf_counter())
        self.cpu_starts.append(time.process_time())

    def __call__(self, examples: list[dict]) -> dict:
        batch = self.collator(examples)
        labels, inputs = batch["labels"], batch["input_ids"]
        self.batches.append({
            "examples": labels.shape[0], "source_len": inputs.shape[1], "target_len": labels.shape[1],
            "target_tokens": int((labels != IGNORE_INDEX).sum()),
            "real_tokens": int(batch["attention_mask"].sum()) + int((labels != IGNORE_INDEX).sum()),
            "padded_tokens": inputs.numel() + labels.numel()})
        return batch

    def close(self) -> None:
        self._hook.remove()

    def steady(self, warmup: int) -> tuple[list[dict[str, int]], float, float]:
        """The batches after ``warmup`` steps (the last one excluded: it has no end time), their wall seconds and
        their CPU seconds."""
        last = len(self.starts) - 1
        if last <= warmup:
            raise RuntimeError(f"only {len(self.starts)} steps ran; need more than warmup={warmup} + 1")
        return (self.batches[warmup:last], self.starts[last] - self.starts[warmup],
                self.cpu_starts[last] - self.cpu_starts[warmup])


def bart_training_flops(model_config: Any, examples: int, source_len: int, target_len: int) -> float:
    """FLOPs of one forward + backward (3x forward) of a BART-architecture model on a padded batch: every
    matrix product (projections, FFN, attention scores and sums, the output layer); elementwise work is left out."""
    d, vocabulary = model_config.d_model, model_config.vocab_size
    encoder_token = model_config.encoder_layers * (8 * d * d + 4 * d * model_config.encoder_ffn_dim + 4 * source_len * d)
    cross_keys_values = model_config.decoder_layers * 4 * d * d  # per encoder token
    decoder_token = model_config.decoder_layers * (
        8 * d * d + 4 * target_len * d  # self-attention
        + 4 * d * d + 4 * source_len * d  # cross-attention queries/outputs, scores and sums
        + 4 * d * model_config.decoder_ffn_dim) + 2 * d * vocabulary
    forward = examples * (source_len * (encoder_token + cross_keys_values) + target_len * decoder_token)
    return 3.0 * forward


def counted_training_flops(model: Any, examples: int, source_len: int, target_len: int) -> float:
    """FLOPs of one forward + backward as torch's FlopCounterMode counts them (to check the formula above)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    inputs = torch.full((examples, source_len), 5, dtype=torch.long)
    labels = torch.full((examples, target_len), 5, dtype=torch.long)
    with FlopCounterMode(display=False) as counter:
        model(input_ids=inputs, labels=labels).loss.backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


def gemm_peak_flops(dtype_name: str, size: int = 2048, repeats: int = 5) -> float:
    """The best FLOP/s of a square matrix product on this machine (all of torch's threads)."""
    import torch

    dtype = getattr(torch, {"fp32": "float32", "bf16": "bfloat16"}[dtype_name])
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b  # warm-up
    best = min(_seconds(lambda: a @ b) for _ in range(repeats))
    return 2 * size ** 3 / best


def _seconds(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def add_threads_option(parser: Any) -> None:
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: torch's own, one per core); on a machine other work keeps "
                             "busy, 1 avoids threads waiting on each other")


def set_threads(threads: int | None) -> int:
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def median(values: list[float]) -> float:
    return statistics.median(values)


def print_json_line(figures: dict[str, Any]) -> None:
    """The last line of every benchmark: its figures, for scripts to check."""
    print(json.dumps(figures, sort_keys=True), flush=True)


def write_doc_block(doc: Path, begin: str, end: str, block: str, at_start: bool = False) -> None:
    """Put ``block`` (which starts with ``begin`` and ends with ``end``) into ``doc`` in place of the block between
    those markers, leaving what other scripts wrote there; a doc without the markers gets it first or last."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    elif at_start:
        text = block + "\n\n" + text.lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.parent.mkdir(exist_ok=True)
    doc.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
