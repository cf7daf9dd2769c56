"""One failure, every process: what each process raises when the main process (or another) fails in the work
that the main process does first. The collectives are faked: each test plays one process of two."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from textbox.cli import report_user_error
from textbox.config import TextBoxError, TextBoxUserError
from textbox.pipeline import processes
from textbox.pipeline.processes import SharedFailure, main_process_first


def process(rank: int) -> SimpleNamespace:
    return SimpleNamespace(is_main_process=rank == 0, process_index=rank)


@pytest.fixture
def collectives(monkeypatch):
    """Fake broadcast (what the main process sent) and gather (what every process reported)."""
    sent: dict[str, list] = {"broadcast": [None], "gather": [None, None]}

    def broadcast(objects, from_process=0):
        return sent["broadcast"] if not objects[0] else objects

    def gather(objects):
        return sent["gather"]

    monkeypatch.setattr("accelerate.utils.broadcast_object_list", broadcast)
    monkeypatch.setattr("accelerate.utils.gather_object", gather)
    return sent


def test_the_failing_main_process_raises_its_own_error(collectives):
    problem = TextBoxUserError("--model_path=x has no config.json")

    def build():
        raise problem

    with pytest.raises(TextBoxUserError) as caught:
        main_process_first(process(0), build)
    assert caught.value is problem and processes.is_shared(caught.value)
    assert not getattr(caught.value, "shown_elsewhere", False)


def test_the_other_process_raises_a_quiet_copy_without_running_the_work(collectives, capsys):
    collectives["broadcast"] = [SharedFailure("--model_path=x has no config.json", 2, True)]
    calls = []
    with pytest.raises(TextBoxUserError, match="has no config.json") as caught:
        main_process_first(process(1), lambda: calls.append(1))
    assert calls == []  # it never builds what failed on the main process
    assert caught.value.exit_code == 2 and caught.value.shown_elsewhere
    assert report_user_error(caught.value) == 2
    assert capsys.readouterr().err == ""  # the main process prints it; this one exits quietly


def test_a_failure_on_another_process_stops_the_main_process_too(collectives):
    collectives["gather"] = [None, SharedFailure("RuntimeError: out of memory (on another process)", 1, False)]
    with pytest.raises(TextBoxError, match="out of memory") as caught:
        main_process_first(process(0), lambda: "built")
    assert not isinstance(caught.value, TextBoxUserError) and caught.value.shown_elsewhere


def test_success_everywhere_returns_the_work(collectives):
    assert main_process_first(process(0), lambda: "built") == "built"
    assert main_process_first(process(1), lambda: "built too") == "built too"


@pytest.mark.parametrize("rank, printed", [("0", True), ("1", False)])
def test_a_config_error_under_a_launcher_is_printed_by_rank_0_only(monkeypatch, capsys, rank, printed):
    from textbox.cli import run_cli

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", rank)
    assert run_cli(["--lerning_rate=1"]) == 2
    assert ("did you mean 'learning_rate'" in capsys.readouterr().err) is printed
