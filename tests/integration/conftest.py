"""Shared by the end-to-end tests: one tiny trained model that writes words, trained once per session."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_script_in_process


@pytest.fixture(scope="session")
def trained_copy_run(tmp_path_factory) -> Path:
    """The run directory of one run_textbox.py training (its entry, in this process) on the reverse-the-words task,
    long enough (25 epochs, about 5 s of training) for the model to write words, so that outputs-in-order checks can
    fail. Its test split has two references per line ([target, source]), written as list literals with whitespace
    around them, as a script may write them: the run reads them as it reads multi-reference files. Validation and
    testing decode with the default backend (CTranslate2 for this BART-shaped model). Tests that run more commands
    on it give each run its own --filename (or their own working directory)."""
    work = tmp_path_factory.mktemp("e2e")
    data = make_copy_dataset(work / "copy")
    sources = (data / "test.src").read_text().splitlines()
    targets = (data / "test.tgt").read_text().splitlines()
    (data / "test.tgt").write_text("".join(f" {[target, source]!r}\t\n" for source, target in zip(sources, targets)))
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--epochs=25", "--filename=run",
            "--metrics=['bleu','rouge','chrf']", "--metrics_for_best_model=['bleu']", "--valid_strategy=epoch"]
    done = run_script_in_process(args, cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    return work / "saved" / "run"
