"""Test helpers, in one place: the toy and copy datasets, the tiny BART config, the subprocess environment
(offline_env), a fresh interpreter (fresh_python), run_textbox.py as a user runs it (run_script, start_script) and
as 2 CPU processes (run_two_processes). Fixtures built from them live in tests/conftest.py; docs/testing.md."""
from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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


def missing_nltk_data(problem: str) -> bool:
    """A config problem that is NLTK data this machine lacks (WordNet for meteor, the Punkt model for ROUGE-L over
    Punkt sentences), not a fault of the configuration."""
    return "metric 'meteor' needs NLTK's WordNet" in problem or "needs NLTK's punkt_tab data" in problem


def problems(*argv: str) -> list[str]:
    """The configuration problems of a command line, as load_checked_config reports them (empty when accepted)."""
    from textbox.checks import load_checked_config
    from textbox.config.errors import ConfigError

    try:
        load_checked_config(list(argv))
    except ConfigError as error:
        return error.problems
    return []


def one_problem(*argv: str) -> str:
    """The one configuration problem of a command line (fails if there are none or several)."""
    found = problems(*argv)
    assert len(found) == 1, found
    return found[0]


def user_config(**values: Any) -> Any:
    """A Config whose given keys were set on the command line (as builders see a user's settings)."""
    from textbox.config.loader import Config
    from textbox.config.schema import DEFAULTS

    return Config({**DEFAULTS, **values}, {name: "command line" for name in values})


def make_toy_dataset(root: Path) -> Path:
    """The smallest plain dataset that passes the dataset check: one example ("a b" -> "c d") per split."""
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        (root / f"{split}.src").write_text("a b\n")
        (root / f"{split}.tgt").write_text("c d\n")
    return root


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


# tiny_bart_config's sizes unless a test says otherwise: d=32, 2 + 2 layers, 2 heads, 64 positions.
TINY_BART_SIZES = {"d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2,
                   "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64,
                   "max_position_embeddings": 64}


def reverse_words_tokenizer(cache_dir: Path) -> Any:
    """The tiny tokenizer: BPE (300 tokens at most, BART's special ids) trained on the reverse-the-words sources of
    tests/unit/trainer/tiny.py (the ``tiny_tokenizer`` fixture, and the two-process workers' own)."""
    from tests.unit.trainer.tiny import reverse_words_split
    from textbox.model.tokenizer import train_bpe_tokenizer

    return train_bpe_tokenizer(reverse_words_split(64, seed=0).sources, vocab_size=300, min_frequency=1,
                               cache_dir=cache_dir, log=lambda _: None)


def tiny_bart_config(tokenizer: Any = None, **changes: Any) -> Any:
    """A from-scratch BART's config (TINY_BART_SIZES, ``changes`` over them). With a ``tokenizer``: its vocabulary
    size and BART's conventions over its ids (pad, bos, eos; the decoder starts with eos and generation is forced to
    end with it); without one, give vocab_size: BartConfig's default ids, which are also textbox's BPE tokenizer's
    (<s> 0, <pad> 1, </s> 2)."""
    from transformers import BartConfig

    ids = {} if tokenizer is None else {
        "vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id, "decoder_start_token_id": tokenizer.eos_token_id,
        "forced_eos_token_id": tokenizer.eos_token_id}
    return BartConfig(**{**TINY_BART_SIZES, **ids, **changes})


def offline_env(**extra: str) -> dict[str, str]:
    """The environment of a test's subprocess: this process's, offline (the hub and datasets), one thread,
    tokenizers without their thread pool, the project importable (first on PYTHONPATH, whose other folders stay: a
    GPU machine's packages may live there, benchmarks/gpu_check.sh); ``extra`` over it."""
    # One thread: tiny models gain nothing from two, and on a busy 2-core machine two threads spin-wait on each
    # other (a tiny model's step took ~1 s with 2 threads and ~30 ms with 1).
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]), **extra}


def run_script(args: list[str], cwd: Path, timeout: int = 900, env: dict | None = None,
               script: str | Path = "run_textbox.py", input: str | None = None) -> subprocess.CompletedProcess:
    """Run one of the project's scripts (or a script at an absolute path) as a user would, in ``cwd``, with
    offline_env (``env`` over it); ``input``: its standard input."""
    return subprocess.run([sys.executable, str(PROJECT_ROOT / script), *args], cwd=cwd, input=input,
                          env=offline_env(**(env or {})), capture_output=True, text=True, timeout=timeout)


def fresh_python(script: str, *args: str, cwd: Path = PROJECT_ROOT, env: dict | None = None,
                 timeout: int = 120) -> subprocess.CompletedProcess:
    """``python -c script args`` in a fresh interpreter (what a module imports or registers, a process-wide
    setting), in ``cwd``; output captured as text. ``env``: the whole environment (default offline_env())."""
    return subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=offline_env() if env is None else env,
                          capture_output=True, text=True, timeout=timeout)


def fresh_python_prints(script: str) -> str:
    """What ``python -c script`` prints in a fresh interpreter (import order, what a module loads): stripped."""
    done = fresh_python(script)
    done.check_returncode()
    return done.stdout.strip()


def run_in_process(args: list[str], cwd: Path) -> int:
    """run_textbox.py's arguments run by its own entry function in this process, in ``cwd``, with one thread as
    run_script gives; the exit code. For a test's reference runs, where a subprocess would only add the
    interpreter's start-up (several seconds)."""
    import torch
    from accelerate.state import AcceleratorState, GradientState

    from textbox.cli import run_cli

    def reset_accelerate() -> None:  # its state is process-wide: a run builds its own Accelerator
        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()

    threads, directory = torch.get_num_threads(), os.getcwd()
    torch.set_num_threads(1)
    reset_accelerate()
    os.chdir(cwd)
    try:
        return run_cli(args)
    finally:
        os.chdir(directory)
        torch.set_num_threads(threads)
        reset_accelerate()


def run_script_in_process(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """run_script's run of run_textbox.py, in this process (run_in_process): its exit code (run_cli's return, which
    the script exits with) and what it wrote to sys.stdout and sys.stderr (its console log, bars and error: lines),
    as run_script's CompletedProcess. For a test of what a run writes, says and returns, where a subprocess adds only
    the interpreter's start-up (4-7 s on a busy machine); a test of the process itself (a signal, a pipe, a launch,
    what it imports) keeps run_script. ``env``: variables set while it runs."""
    import contextlib
    import io

    stdout, stderr = io.StringIO(), io.StringIO()
    saved = {name: os.environ.get(name) for name in env or {}}
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = run_in_process(args, cwd)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return subprocess.CompletedProcess(["run_textbox.py", *args], code, stdout.getvalue(), stderr.getvalue())


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the system picks it), for a launcher's rendezvous: tests running side by side
    (pytest -n) each get their own."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def accelerate_two_cpu_processes() -> list[str]:
    """The accelerate launch command that really starts 2 communicating CPU processes (ENVIRONMENT.md)."""
    port = str(free_port())
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", port]


def run_two_processes(args: list[str], cwd: Path, script: str | Path = "run_textbox.py",
                      launcher: list[str] | tuple[str, ...] | None = None, cpu: bool = True, env: dict | None = None,
                      timeout: int = 900) -> subprocess.CompletedProcess:
    """``script`` (one of the project's, or an absolute path) launched as 2 processes, in ``cwd``: by
    accelerate_two_cpu_processes unless ``launcher`` is another launch command; with offline_env, and
    ACCELERATE_USE_CPU (read by accelerate launch only) unless ``cpu`` is False; ``env`` over it."""
    extra = {"ACCELERATE_USE_CPU": "true"} if cpu else {}
    command = [*(launcher or accelerate_two_cpu_processes()), str(PROJECT_ROOT / script), *args]
    return subprocess.run(command, cwd=cwd, env=offline_env(**{**extra, **(env or {})}), capture_output=True, text=True,
                          timeout=timeout)


def train_losses(run_dir: Path) -> dict[int, float]:
    """Per-step training loss of a run, from its metrics.jsonl (logged with --logging_steps=1)."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {row["step"]: row["loss"] for row in rows if row["split"] == "train"}


def start_script(args: list[str], cwd: Path, launcher: tuple[str, ...] = (sys.executable,)) -> subprocess.Popen:
    """run_textbox.py started in the background (single-threaded, offline), its stderr captured."""
    env = offline_env(ACCELERATE_USE_CPU="true")  # read by accelerate launch only
    return subprocess.Popen([*launcher, str(PROJECT_ROOT / "run_textbox.py"), *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for_step(run_dir: Path, step: int, process: subprocess.Popen, timeout: float = 900) -> None:
    """Return once the run has logged training step ``step``; fail if it dies first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (run_dir / "metrics.jsonl").exists() and max(train_losses(run_dir), default=0) >= step:
            return
        assert process.poll() is None, process.stderr.read()[-3000:]
        time.sleep(0.05)
    raise AssertionError(f"step {step} not reached")


def sigterm_after_step(args: list[str], cwd: Path, run_dir: Path, step: int) -> tuple[int, str]:
    """Start a run, send it SIGTERM once it has logged ``step``; its (exit code, stderr)."""
    process = start_script(args, cwd=cwd)
    wait_for_step(run_dir, step, process)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=600)
    return process.returncode, stderr
