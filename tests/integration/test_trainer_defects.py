"""Trainer defects seen from outside: resuming from a damaged checkpoint_last; skipped NaN batches under 2 processes."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import (TINY_MODEL_ARGS, make_copy_dataset, run_in_process, run_script, run_script_in_process,
                           run_two_processes)

pytestmark = pytest.mark.slow


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(path.relative_to(run_dir)): path.read_bytes() for path in sorted(run_dir.rglob("*")) if path.is_file()}


def test_resuming_from_damaged_weights_names_the_file_and_changes_nothing(tmp_path: Path):
    data = make_copy_dataset(tmp_path / "copy", {"train": 32, "valid": 8, "test": 8})
    args = [*TINY_MODEL_ARGS, "--dataset=copy", f"--data_path={data}", "--epochs=1", "--filename=run",
            f"--saved_dir={tmp_path / 'saved'}"]
    assert run_in_process(args, cwd=tmp_path) == 0  # the --resume below is a new run, as a user's is
    run_dir = tmp_path / "saved" / "run"
    weights = run_dir / "checkpoint_last" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:weights.stat().st_size // 2])  # a copy cut short
    before = _files(run_dir)

    resumed = run_script_in_process([*args, "--resume=True"], cwd=tmp_path)

    assert resumed.returncode == 2, resumed.stderr[-3000:]
    assert "Traceback" not in resumed.stderr
    assert (f"error: {weights} is damaged (" in resumed.stderr
            and f"start a new run (another --filename), or use --model_path={run_dir / 'checkpoint_best'} to "
                "fine-tune from its best weights" in resumed.stderr), resumed.stderr[-3000:]
    assert _files(run_dir) == before  # not a byte changed, nothing added (project.log and FAILED included)


def test_a_skipped_nan_batch_leaves_the_two_process_update_of_the_others_alone(tmp_path: Path):
    """The finite-token denominator is summed over both processes: one step over 8 examples on 2 processes,
    one of them NaN and skipped, updates the weights exactly as one step over the 7 others on one process
    (max difference 0.059 when the skipped batch's tokens stayed in the denominator)."""
    import torch

    worker = Path(__file__).with_name("skip_nan_worker.py")
    outputs = {mode: tmp_path / f"{mode}.pt" for mode in ("alone", "skip")}
    for mode, run in (("alone", run_script), ("skip", run_two_processes)):
        done = run([mode, str(outputs[mode]), str(tmp_path / "cache")], cwd=tmp_path, script=worker,
                   env={"ACCELERATE_USE_CPU": "true"}, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    alone, skipped = (torch.load(outputs[mode]) for mode in ("alone", "skip"))
    for name, value in alone.items():
        torch.testing.assert_close(skipped[name], value, rtol=1e-5, atol=1e-7, msg=name)


def _odd_batches(mode: str, out: Path, two_processes: bool) -> subprocess.CompletedProcess:
    run = run_two_processes if two_processes else run_script
    done = run([mode, str(out), str(out.parent / "cache")], cwd=out.parent,
               script=Path(__file__).with_name("odd_batches_worker.py"), env={"ACCELERATE_USE_CPU": "true"},
               timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def odd_batches_alone(tmp_path_factory) -> dict:
    """The reference both batchings below must equal: one step over the 7 examples in one batch on one process."""
    import torch

    out = tmp_path_factory.mktemp("odd-batches") / "alone.pt"
    _odd_batches("alone", out, two_processes=False)
    return torch.load(out)


@pytest.mark.parametrize("batching", ["shuffled", "budget"])
def test_an_odd_number_of_batches_on_two_processes_trains_every_example_once(tmp_path: Path, batching,
                                                                             odd_batches_alone):
    """7 batches on 2 processes: accelerate evened the shares by training the epoch's first batch (or first
    examples) twice; fillers that train nothing take its place, so one step equals one step over the 7 examples on
    one process (the --max_tokens path: a batch count checked odd)."""
    import torch

    done = _odd_batches(batching, tmp_path / f"{batching}.pt", two_processes=True)
    if batching == "budget":
        batches = int(done.stdout.split("batches: ")[1].split()[0])
        assert batches % 2 == 1, batches
    two = torch.load(tmp_path / f"{batching}.pt")
    for name, value in odd_batches_alone.items():
        torch.testing.assert_close(two[name], value, rtol=1e-5, atol=1e-7, msg=name)
