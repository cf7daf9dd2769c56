"""Shared test set-up: offline, quiet, deterministic; paths to the project and ../shared."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One thread (unless the caller sets another count): the tests' models are tiny, and on a busy 2-core machine two
# threads spin-wait on each other (a session fixture's 150 training steps took 120 s with 2 threads, 2.3 s with 1).
# Set before torch is imported, which reads it once; run_script gives its subprocesses the same.
os.environ.setdefault("OMP_NUM_THREADS", "1")

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


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """The toy dataset in tmp_path/toy: one example ("a b" -> "c d") per split, enough for the dataset check."""
    from tests.helpers import make_toy_dataset

    return make_toy_dataset(tmp_path / "toy")


@pytest.fixture
def fresh_accelerate_state():
    """accelerate's process-wide state reset around a test that builds its own Accelerator(s)."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
