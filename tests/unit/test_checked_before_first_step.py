"""Issue 36: everything that can be checked before the first step is checked then. A value that would fail later
(building the model, the first step, seeding) is one `error:` line naming the key and what to do, exit 2, before
anything is built or written."""
from __future__ import annotations

from pathlib import Path

import pytest

from textbox.cli import run_cli


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "toy"
    path.mkdir()
    for split in ("train", "valid", "test"):
        (path / f"{split}.src").write_text("a b\n")
        (path / f"{split}.tgt").write_text("c d\n")
    return path


def refused(argv: list[str], capsys) -> str:
    """run_cli's exit code must be 2 with nothing run; the error it printed."""
    ran = []
    assert run_cli(argv, runner=ran.append) == 2
    assert not ran
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_seed_numpy_and_torch_refuse_is_refused_at_config_validation(data: Path, tmp_path: Path, capsys, seed):
    err = refused([f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}", f"--seed={seed}"], capsys)
    assert f"--seed must be in [0, 2**32 - 1] (= 4294967295), the seeds numpy and torch accept, got {seed}" in err
    assert not (tmp_path / "saved").exists()
    assert run_cli([f"--data_path={data}", f"--seed={2**32 - 1}"], runner=lambda config: None) == 0
