"""One process: the disk check finds the disk shared, leaves nothing behind, and the main process writes."""
from __future__ import annotations

from pathlib import Path

from textbox.trainer import disks


def test_one_process_shares_its_own_disk_and_leaves_no_marker(tmp_path: Path, monkeypatch, fresh_accelerate_state):
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "saved").mkdir()
    layout = disks.disk_layout(accelerator, Path("saved") / "run")  # relative, as --saved_dir usually is
    assert layout == disks.DiskLayout(shared=True, first=0, count=1)
    assert list(tmp_path.rglob("*")) == [tmp_path / "saved"]  # the marker is gone, the run directory not made
    assert disks.writes_checkpoints(accelerator)
    assert list(disks.processes_on_this_disk(accelerator)) == [0]
    assert accelerator.project_configuration.save_on_each_node is False
    disks.copy_to_other_disks(accelerator, tmp_path / "saved")  # nothing to copy on a shared disk


def test_a_config_error_is_printed_by_the_first_process_of_every_machine(monkeypatch, capsys):
    """Machines without a shared disk may see different files (a run's config.yaml): each prints its own error."""
    from textbox.cli import run_cli

    monkeypatch.setenv("WORLD_SIZE", "4")
    for rank, local_rank, printed in (("2", "0", True), ("3", "1", False)):
        monkeypatch.setenv("RANK", rank)
        monkeypatch.setenv("LOCAL_RANK", local_rank)
        assert run_cli(["--lerning_rate=1"]) == 2
        assert ("did you mean 'learning_rate'" in capsys.readouterr().err) is printed
