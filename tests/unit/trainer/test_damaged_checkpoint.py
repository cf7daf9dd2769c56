"""A damaged or missing file in checkpoint_last stops a resume with a message naming it (exit 2), before anything
on disk changes; accelerate alone would raise a library error, or silently skip a damaged random-state file."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from textbox.config import TextBoxUserError

FILES = ["model.safetensors", "optimizer.bin", "custom_checkpoint_0.pkl", "random_states_0.pkl", "train_state.json"]


def snapshot(run_dir: Path) -> dict[str, str]:
    return {str(path.relative_to(run_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(run_dir.rglob("*")) if path.is_file()}


@pytest.fixture
def finished_run(make_trainer, train_data) -> Path:
    trainer = make_trainer(max_steps=1)
    trainer.fit(train_data, None)
    assert sorted(path.name for path in (trainer.run_dir / "checkpoint_last").iterdir()) == sorted(FILES)
    return trainer.run_dir


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("damage", ["truncated", "missing"])
def test_a_damaged_checkpoint_last_file_is_named_and_nothing_changes(make_trainer, train_data, finished_run, name,
                                                                     damage):
    path = finished_run / "checkpoint_last" / name
    if damage == "missing":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])
    before = snapshot(finished_run)
    problem = "missing" if damage == "missing" else r"damaged \(.+\)"
    with pytest.raises(TextBoxUserError, match=rf"checkpoint_last/{name} is {problem}; the run cannot continue "
                                               rf"exactly from it: start a new run \(another --filename\), or use "
                                               rf"--model_path=\S+/checkpoint_best to fine-tune from its best weights"):
        make_trainer(max_steps=2, resume=True).fit(train_data, None)
    assert snapshot(finished_run) == before


def test_a_readable_checkpoint_of_another_model_keeps_the_library_error(make_trainer, train_data, finished_run,
                                                                        tiny_model):
    """Every file reads: the failure is not damage, and the library's own error is not replaced by a wrong one."""
    with pytest.raises(RuntimeError, match="size mismatch"):
        make_trainer(model=tiny_model(d_model=16), max_steps=2, resume=True).fit(train_data, None)
