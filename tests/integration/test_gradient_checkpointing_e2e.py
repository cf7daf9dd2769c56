"""--gradient_checkpointing=True through run_textbox.py: the same training losses as without it, on one process
and under DistributedDataParallel on two (non-reentrant checkpointing is what DDP supports)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_in_process, run_two_processes, train_losses

# The tiny model without dropout: two processes draw other dropout masks than one (the unit tests check that the
# masks are the same with and without checkpointing).
ARGS = [*(arg.replace("'dropout': 0.1", "'dropout': 0.0") for arg in TINY_MODEL_ARGS), "--dataset=copy",
        "--max_steps=6", "--logging_steps=1", "--do_valid=False", "--do_test=False"]


def test_same_losses_with_checkpointing_on_one_and_two_processes(tmp_path: Path):
    """The one-process pair runs in this process (the flag's parsing is the same); the two-process pair through
    accelerate launch, as a user runs it."""
    data = make_copy_dataset(tmp_path / "copy")
    common = [*ARGS, f"--data_path={data}"]
    for name, extra in (("plain", []), ("checkpointed", ["--gradient_checkpointing=True"])):
        assert run_in_process([*common, *extra, f"--filename={name}"], cwd=tmp_path) == 0
        two = run_two_processes([*common, *extra, f"--filename=two_{name}"], tmp_path)
        assert two.returncode == 0, two.stderr[-3000:]
    runs = tmp_path / "saved"
    assert "gradient checkpointing: every layer" in (runs / "checkpointed" / "project.log").read_text()
    for plain_run, checkpointed_run in (("plain", "checkpointed"), ("two_plain", "two_checkpointed")):
        plain, checkpointed = train_losses(runs / plain_run), train_losses(runs / checkpointed_run)
        assert sorted(plain) == sorted(checkpointed) == list(range(1, 7))
        assert all(checkpointed[step] == pytest.approx(plain[step], rel=1e-5) for step in plain), \
            (checkpointed_run, checkpointed, plain)
