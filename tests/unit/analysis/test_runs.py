"""Reading run directories: the test split their config names, found from any directory, and clear errors."""
from pathlib import Path

import pytest

from tests.unit.analysis.fake_runs import write_dataset, write_run
from textbox.analysis.runs import load_run
from textbox.config.errors import DataError

SOURCES = ["one two", "three four five", "six"]
TARGETS = ["owt eno", "['eerht ruof evif', 'five four three']", "xis"]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "data", SOURCES, TARGETS)


def test_a_run_holds_its_config_test_split_and_generations(tmp_path, data):
    run = load_run(write_run(tmp_path / "saved" / "run", data, ["x", "y", "z"], lower_evaluation=True))
    assert run.hypotheses == ["x", "y", "z"]
    assert run.test.sources == SOURCES
    assert run.test.targets[1] == ["eerht ruof evif", "five four three"]
    assert run.config.lower_evaluation is True


def test_relative_paths_are_found_from_another_directory(tmp_path, monkeypatch):
    project = tmp_path / "project"
    write_dataset(project / "dataset" / "toy", SOURCES, TARGETS)
    (project / "checkpoint").mkdir()
    monkeypatch.chdir(project)  # as run_textbox.py ran: data, model and saved_dir relative to the project
    write_run(project / "saved" / "run", "dataset/toy", ["x", "y", "z"], saved_dir="saved", model="transformer",
              model_path="./checkpoint")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    run = load_run(Path("../project/saved/run"))
    assert run.test.sources == SOURCES
    assert Path(run.config.data_path) == (project / "dataset" / "toy").resolve()
    assert Path(run.config.model_path) == (project / "checkpoint").resolve()
    assert not (elsewhere / "dataset").exists()


def test_a_missing_test_set_says_where_to_run_from(tmp_path, data):
    run_dir = write_run(tmp_path / "saved" / "run", data, ["x", "y", "z"])
    for name in ("test.src", "test.tgt"):
        (data / name).unlink()
    data.rmdir()
    with pytest.raises(DataError, match="the test set of run .* is not found: .*data does not exist"):
        load_run(run_dir)


def test_a_missing_directory_or_file_is_named(tmp_path, data):
    with pytest.raises(DataError, match="run directory .*nowhere does not exist"):
        load_run(tmp_path / "nowhere")
    run_dir = write_run(tmp_path / "run", data, ["x", "y", "z"])
    (run_dir / "generation.txt").unlink()
    with pytest.raises(DataError, match="has no generation.txt: the run did not test"):
        load_run(run_dir)
    (run_dir / "config.yaml").unlink()
    with pytest.raises(DataError, match="has no config.yaml"):
        load_run(run_dir)


def test_a_broken_config_yaml_is_named(tmp_path, data):
    run_dir = write_run(tmp_path / "run", data, ["x", "y", "z"])
    (run_dir / "config.yaml").write_text("- just\n- a list\n")
    with pytest.raises(DataError, match="config.yaml must be a mapping"):
        load_run(run_dir)


def test_generation_line_count_must_match_the_test_set(tmp_path, data):
    run_dir = write_run(tmp_path / "run", data, ["x", "y"])
    with pytest.raises(DataError, match="generation.txt has 2 lines but the run's test set .* has 3 examples"):
        load_run(run_dir)


def test_generations_for_an_input_file_are_not_test_generations(tmp_path, data):
    run_dir = write_run(tmp_path / "run", data, ["x", "y", "z"], input_file=str(data / "test.src"))
    with pytest.raises(DataError, match="generations for --input_file=.*test.src, not for the test set"):
        load_run(run_dir)
