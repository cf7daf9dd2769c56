"""run_analysis.py (textbox/compare_files.py): TextBox 2.0's `python run_analysis.py --dataset=cnndm BART_output.txt
T5_output.txt` scores each output file against the dataset's test references, with the metrics and options of its
catalogue entry, and compares the systems in one table; bad input is one message and exit code 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import make_copy_dataset, run_script
from textbox.compare_files import main
from textbox.evaluator.score_files import evaluate_files


@pytest.fixture
def outputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A samsum-named local dataset of 6 test examples, a perfect system's outputs and a worse one's."""
    data = make_copy_dataset(tmp_path / "samsum", {"train": 2, "valid": 2, "test": 6})
    perfect, worse = tmp_path / "BART_output.txt", tmp_path / "T5_output.txt"
    perfect.write_text((data / "test.tgt").read_text())
    worse.write_text((data / "test.src").read_text())  # the words in the source's order: partly right
    return data, perfect, worse


def test_each_file_is_scored_with_the_datasets_metrics_and_the_systems_compared(outputs, capsys):
    data, perfect, worse = outputs
    assert main(["--dataset=samsum", f"--data_path={data}", str(perfect), str(worse)]) == 0
    table, line = capsys.readouterr().out.rstrip("\n").rsplit("\n", 1)
    scores = json.loads(line)["scores"]
    assert list(scores) == ["BART_output", "T5_output"]
    assert set(scores["BART_output"]) == {"rouge-1", "rouge-2", "rouge-l", "rouge-lsum", "rouge-w"}  # samsum.yaml's
    assert scores["BART_output"]["rouge-2"] == 100.0 > scores["T5_output"]["rouge-2"]
    assert "100.00*" in table and "samsum: 6 test examples" in table
    # the figures are textbox-evaluate's for the same files (one reader, one scorer)
    alone = evaluate_files([f"--hyp={worse}", f"--ref={data / 'test.tgt'}", "--metrics=['rouge']"])
    assert alone.scores == scores["T5_output"]


@pytest.mark.parametrize("argv, message", [
    ([], "no output files given"),
    (["--dataset", "samsum", "{out}"], "--dataset: give options as --key=value"),
    (["--dataset=samsum", "--data_path={data}", "{missing}"], "output file {missing} does not exist"),
    (["--dataset=samsum", "--data_path={data}", "{short}"],
     "{short} has 2 lines, but the test split of 'samsum' has 6"),
    (["--dataset=samsum", "--data_path={data}", "--metrcs=['bleu']", "{out}"], "did you mean 'metrics'"),
])
def test_bad_input_is_one_message_and_exit_2(outputs, tmp_path, capsys, argv, message):
    data, perfect, _ = outputs
    short = tmp_path / "short.txt"
    short.write_text("a\nb\n")
    names = {"data": data, "out": perfect, "missing": tmp_path / "missing.txt", "short": short}
    assert main([arg.format(**names) for arg in argv]) == 2
    captured = capsys.readouterr()
    assert message.format(**names) in captured.err and "Traceback" not in captured.err and captured.out == ""


def test_the_script_runs_textbox_documented_command(outputs):
    """(That its --help imports no torch: tests/unit/test_light_imports.py.)"""
    data, perfect, worse = outputs
    done = run_script(["--dataset=samsum", f"--data_path={data}", perfect.name, worse.name], cwd=perfect.parent,
                      script="run_analysis.py")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["scores"]["BART_output"]["rouge-1"] == 100.0


def test_the_same_arguments_to_textbox_analysis_test_the_files_against_the_first(outputs, tmp_path, capsys):
    """The one command for significance takes run_analysis.py's arguments, and scores the files the same."""
    from textbox.analysis.command import main as analyse

    data, perfect, worse = outputs
    arguments = ["--dataset=samsum", f"--data_path={data}", str(perfect), str(worse)]
    assert main(arguments) == 0
    scores = json.loads(capsys.readouterr().out.rstrip("\n").rsplit("\n", 1)[1])["scores"]
    assert analyse([*arguments, "--metrics=rouge-2", "--tests=ar", "--ar_samples=50", "--examples=0",
                    f"--output_dir={tmp_path / 'out'}"]) == 0
    analysis = json.loads((tmp_path / "out" / "analysis.json").read_text())
    assert [(row["system"], row["score"]) for row in analysis["results"]] == \
        [(name, pytest.approx(scores[name]["rouge-2"])) for name in ("BART_output", "T5_output")]
    assert analysis["results"][1]["tests"][0]["test"] == "ar"
