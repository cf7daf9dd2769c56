"""python -m textbox.analysis: the report and plots it writes, what it prints, and its exit codes."""
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu

from tests.helpers import offline_env
from tests.unit.analysis.fake_runs import write_dataset, write_run
from textbox.analysis.command import main

WORDS = "red green blue cat dog bird tree house river stone light dark".split()


def reverse(text: str) -> str:
    return " ".join(reversed(text.split()))


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """Two runs on a reverse-the-words test set: b gets every example right, a gets none right."""
    rng = random.Random(0)
    sources = [" ".join(rng.choices(WORDS, k=rng.randint(2, 9))) for _ in range(40)]
    targets = [reverse(source) for source in sources]
    data = write_dataset(tmp_path / "data", sources, targets)
    run_a = write_run(tmp_path / "saved" / "a", data, sources)
    run_b = write_run(tmp_path / "saved" / "b", data, targets)
    return run_a, run_b


def test_comparison_writes_report_and_plots_into_run_b(runs, capsys):
    run_a, run_b = runs
    assert main([str(run_a), str(run_b), "--samples=200", "--buckets=3", "--examples=2"]) == 0
    printed = capsys.readouterr().out
    assert "p < 0.005: b beats a at the 5% level" in printed
    assert f"report: {run_b / 'analysis.md'}" in printed
    report = (run_b / "analysis.md").read_text()
    for heading in ("## Overall", "## Does b beat a?", "## By source length", "## Lengths in words",
                    "## Examples where the runs differ most"):
        assert heading in report
    assert report.count("### Line ") == 2
    assert "| b   | 100" in report  # b reproduces the references: BLEU 100
    for plot in ("analysis_buckets.png", "analysis_lengths.png", "analysis_bootstrap.png"):
        assert (run_b / plot).read_bytes().startswith(b"\x89PNG")
        assert f"]({plot})" in report
    assert not (run_a / "analysis.md").exists()


def test_one_run_is_analysed_alone_in_its_directory(runs, capsys):
    run_a, _ = runs
    assert main([str(run_a), "--metric=ter", "--samples=50", "--examples=1"]) == 0
    report = (run_a / "analysis.md").read_text()
    assert "## Examples the run does worst on" in report and "Does b beat a" not in report
    assert "ter: sacrebleu nrefs:1|case:lc|tok:tercom" in report
    sources = (run_a.parent.parent / "data" / "test.src").read_text().splitlines()
    worst = max(range(len(sources)), key=lambda i: sacrebleu.sentence_ter(sources[i], [reverse(sources[i])]).score)
    assert f"### Line {worst + 1}: ter a " in report  # ter is better low: the worst example has the highest
    assert (run_a / "analysis_buckets.png").is_file() and not (run_a / "analysis_bootstrap.png").exists()
    assert capsys.readouterr().out.startswith("a: ter ")


def test_a_comparison_of_different_metric_options_says_whose_are_used(tmp_path, runs):
    run_a, _ = runs
    data = tmp_path / "data"
    run_c = write_run(tmp_path / "saved" / "c", data, (data / "test.tgt").read_text().splitlines(),
                      lower_evaluation=True)
    assert main([str(run_a), str(run_c), "--samples=20"]) == 0
    assert "lower_evaluation: False in a, True in b): both are scored with a's" in (run_c / "analysis.md").read_text()


@pytest.mark.parametrize("arguments, message", [
    (["{missing}"], "run directory .*missing does not exist"),
    (["{a}", "--metric=distinct-2"], "--metric=distinct-2 cannot be analysed per example"),
    (["{a}", "{short}"], "different test sets"),
])
def test_bad_input_is_one_message_and_exit_code_2(tmp_path, runs, capsys, arguments, message):
    data = write_dataset(tmp_path / "short", ["red cat"], ["cat red"])
    paths = {"missing": tmp_path / "missing", "a": runs[0], "short": write_run(tmp_path / "s", data, ["x"])}
    assert main([argument.format(**paths) for argument in arguments]) == 2
    error = capsys.readouterr().err
    assert error.startswith("textbox.analysis: ") and len(error.strip().splitlines()) == 1
    assert re.search(message, error)


@pytest.mark.parametrize("arguments, message", [
    (["a", "b", "c"], "give one or two run directories, got 3"),
    (["a", "--buckets=0"], "argument --buckets: must be at least 1, got 0"),
    (["a", "--samples=many"], "argument --samples: invalid"),
])
def test_malformed_arguments_exit_with_usage_and_code_2(arguments, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_module_runs_from_any_directory_as_a_user_would(runs, tmp_path):
    run_a, run_b = runs
    finished = subprocess.run([sys.executable, "-m", "textbox.analysis", str(run_a), str(run_b), "--samples=100",
                               "--metric=chrf"], cwd=tmp_path, env=offline_env(), capture_output=True, text=True,
                              timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert "b - a = +" in finished.stdout and (run_b / "analysis.md").is_file()
