"""Test helpers: a tiny synthetic dataset and the tiny model settings used by end-to-end tests."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT_ROOT

TINY_MODEL_ARGS = [
    "--model=transformer",
    "--config_kwargs={'d_model': 32, 'encoder_layers': 2, 'decoder_layers': 2, 'encoder_attention_heads': 2,"
    " 'decoder_attention_heads': 2, 'encoder_ffn_dim': 64, 'decoder_ffn_dim': 64, 'dropout': 0.1}",
    "--tokenizer_kwargs={'vocab_size': 300, 'min_frequency': 1}",
    "--src_len=24", "--tgt_len=16", "--train_batch_size=8", "--eval_batch_size=16",
    "--learning_rate=0.003", "--scheduler=constant", "--warmup_steps=0", "--logging_steps=2", "--tracker=none",
]

_WORDS = "red green blue cat dog bird tree house river stone light dark small big old new".split()


def make_copy_dataset(root: Path, sizes: dict[str, int] | None = None, seed: int = 0) -> Path:
    """A reverse-the-words task: learnable in seconds, with real line-per-example files."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for split, count in (sizes or {"train": 96, "valid": 16, "test": 13}).items():
        sources, targets = [], []
        for _ in range(count):
            words = rng.choices(_WORDS, k=rng.randint(2, 6))
            sources.append(" ".join(words))
            targets.append(" ".join(reversed(words)))
        (root / f"{split}.src").write_text("\n".join(sources) + "\n")
        (root / f"{split}.tgt").write_text("\n".join(targets) + "\n")
    return root


def run_script(args: list[str], cwd: Path, timeout: int = 900, env: dict | None = None,
               script: str = "run_textbox.py") -> subprocess.CompletedProcess:
    """Run one of the project's scripts as a user would, in ``cwd``."""
    # One thread: tiny models gain nothing from two, and on a busy 2-core machine two threads spin-wait on each
    # other (a tiny model's step took ~1 s with 2 threads and ~30 ms with 1).
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                "OMP_NUM_THREADS": "1", "PYTHONPATH": str(PROJECT_ROOT), **(env or {})}
    return subprocess.run([sys.executable, str(PROJECT_ROOT / script), *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def accelerate_two_cpu_processes() -> list[str]:
    """The accelerate launch command that really starts 2 communicating CPU processes (ENVIRONMENT.md)."""
    port = str(29500 + os.getpid() % 400)
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", port]
