"""python -m textbox.evaluator.score_files (textbox-evaluate): scores files like compute_metrics, and reports user
errors with exit code 2."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu

from tests.helpers import offline_env
from textbox.data.lines import parse_references, read_lines
from textbox.evaluator.score_files import main
from textbox.evaluator.metrics import compute_metrics

PROJECT_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def files(tmp_path):
    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)
    return write


def test_read_lines_keeps_blank_lines_but_not_the_final_newline(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one\r\n\nthree\n", encoding="utf-8")
    assert read_lines(path) == ["one", "", "three"]


def test_parse_references_reads_python_lists_as_several_references():
    assert parse_references("['a cat', 'the cat']") == ["a cat", "the cat"]
    assert parse_references("[laughs] a cat") == ["[laughs] a cat"]
    assert parse_references("  ['a', 'b'] ") == ["a", "b"]
    assert parse_references("[1, 2]") == ["[1, 2]"]
    assert parse_references("a cat") == ["a cat"]


def test_scores_files_and_prints_a_table_and_a_json_line(files, capsys):
    hyp = files("hyp.txt", "the cat sat on the mat\n\na dog barks\n")
    ref = files("ref.txt", "['the cat is on the mat', 'a cat sat on the mat']\nhello\na dog barked\n")
    assert main([f"--hyp={hyp}", f"--ref={ref}", "--metrics=['bleu','rouge']", "--bleu_max_ngrams=2"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    result = json.loads(printed[-1])
    expected = compute_metrics(["bleu", "rouge"], ["the cat sat on the mat", "", "a dog barks"],
                               [["the cat is on the mat", "a cat sat on the mat"], ["hello"], ["a dog barked"]],
                               options={"bleu_max_ngrams": 2})
    assert result["scores"] == pytest.approx(expected.scores)
    assert list(result["scores"]) == ["bleu", "bleu-1", "bleu-2", "rouge-1", "rouge-2", "rouge-l", "rouge-lsum",
                                      "rouge-w"]
    streams = [["the cat is on the mat", "hello", "a dog barked"], ["a cat sat on the mat", None, None]]
    bleu = sacrebleu.BLEU(max_ngram_order=2).corpus_score(["the cat sat on the mat", "", "a dog barks"], streams)
    assert ["bleu-2", f"{bleu.score:.2f}"] in [line.split() for line in printed]


def test_sources_feed_novelty(files, capsys):
    hyp, ref, src = files("hyp.txt", "a b c\n"), files("ref.txt", "x\n"), files("src.txt", "a b\n")
    assert main([f"--hyp={hyp}", f"--ref={ref}", f"--src={src}", "--metrics=['novelty']",
                 "--novelty_max_ngrams=1"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["scores"] == {"novelty-1": pytest.approx(100 / 3)}


def test_mismatched_line_counts_name_both_files(files, capsys):
    hyp, ref = files("hyp.txt", "a\nb\n"), files("ref.txt", "a\n")
    assert main([f"--hyp={hyp}", f"--ref={ref}"]) == 2
    assert f"2 lines (--hyp={hyp}), 1 lines (--ref={ref})" in capsys.readouterr().err


def test_every_argument_problem_is_reported_at_once(files, capsys):
    ref = files("ref.txt", "a\n")
    code = main(["--hyp=missing.txt", f"--ref={ref}", "--metrics=['bleu','rogue']", "--bleu_max_ngram=2",
                 "--bleu_tokenize=moses"])
    error = capsys.readouterr().err
    assert code == 2
    assert "--hyp: file missing.txt does not exist" in error
    assert "unknown metric 'rogue'; did you mean 'rouge'?" in error
    assert "unknown option --bleu_max_ngram; did you mean 'bleu_max_ngrams'?" in error
    assert "--bleu_tokenize must be one of" in error


def test_option_values_are_checked(files, capsys):
    hyp = files("hyp.txt", "a\n")
    assert main([f"--hyp={hyp}", f"--ref={hyp}", "--metrics=['distinct']", "--distinct_max_ngrams=0"]) == 2
    assert "--distinct_max_ngrams must be at least 1, got 0" in capsys.readouterr().err


def test_help_lists_options_and_metrics(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--multiref_strategy" in out and "self_bleu" in out and "--hyp=<file>" in out


def test_module_entry_point_exits_2_without_traceback(files):
    completed = subprocess.run([sys.executable, "-m", "textbox.evaluator.score_files", "--hyp=nowhere.txt"],
                               env=offline_env(),
                               capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert completed.returncode == 2
    assert "--ref=<file> is required" in completed.stderr and "Traceback" not in completed.stderr


def test_a_byte_order_mark_is_not_text(tmp_path, capsys):
    """A reference file saved with a UTF-8 byte-order mark (Windows editors do) scores 100 against the same lines
    without one: the mark is not part of the first reference (it was: BLEU 99.76 on these 50 lines)."""
    lines = "".join(f"sentence number {i} is about a cat on a mat\n" for i in range(50))
    (tmp_path / "hyp.txt").write_text(lines, encoding="utf-8")
    (tmp_path / "ref.txt").write_text(lines, encoding="utf-8-sig")
    assert (tmp_path / "ref.txt").read_bytes().startswith(b"\xef\xbb\xbf")
    assert main([f"--hyp={tmp_path / 'hyp.txt'}", f"--ref={tmp_path / 'ref.txt'}", "--metrics=['bleu']"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["scores"]["bleu"] == pytest.approx(100.0)


REFERENCE_LINES = [" ['a cat sat on the mat', 'the cat sat on a mat'] ", "['a dog ran in the park', 'the dog ran']\t",
                   "  a bird sang  ", "[laughs] a cow mooed", "['one horse']"]


def test_a_run_and_textbox_evaluate_read_references_alike(tmp_path, capsys):
    """A list literal with whitespace around it holds several references for a run's test split as for
    textbox-evaluate (the run read it as one literal reference), so rescoring a run's files gives its figures."""
    from textbox.config.loader import Config
    from textbox.config.schema import DEFAULTS
    from textbox.data.readers import read_splits

    (tmp_path / "test.src").write_text("".join(f"source {i}\n" for i in range(len(REFERENCE_LINES))))
    (tmp_path / "test.tgt").write_text("".join(line + "\n" for line in REFERENCE_LINES))
    run_references = read_splits(Config({**DEFAULTS, "data_path": str(tmp_path)}), ("test",))["test"].targets
    assert run_references == [["a cat sat on the mat", "the cat sat on a mat"],
                              ["a dog ran in the park", "the dog ran"],
                              ["  a bird sang  "], ["[laughs] a cow mooed"], ["one horse"]]
    assert [parse_references(line) for line in read_lines(tmp_path / "test.tgt")] == run_references
    hypotheses = ["the cat sat on a mat", "the dog ran", "a bird sang", "a cow mooed", "one horse"]
    (tmp_path / "hyp.txt").write_text("".join(text + "\n" for text in hypotheses))
    assert main([f"--hyp={tmp_path / 'hyp.txt'}", f"--ref={tmp_path / 'test.tgt'}", "--metrics=['bleu','rouge']"]) == 0
    rescored = json.loads(capsys.readouterr().out.splitlines()[-1])["scores"]
    assert rescored == pytest.approx(compute_metrics(["bleu", "rouge"], hypotheses, run_references).scores)


def test_a_reader_that_stops_early_gets_no_traceback(files):
    """`textbox-evaluate ... | head -1` (or any reader that closes the pipe) printed a BrokenPipeError traceback and
    exited 1; it stops quietly now, with the status a shell gives a writer stopped by SIGPIPE."""
    hyp, ref = files("hyp.txt", "a cat\n"), files("ref.txt", "a cat\n")
    env = offline_env()
    command = f"{sys.executable} -m textbox.evaluator.score_files --hyp={hyp} --ref={ref} | true"
    completed = subprocess.run(["bash", "-o", "pipefail", "-c", command], env=env, capture_output=True, text=True,
                               cwd=PROJECT_ROOT)
    assert "Traceback" not in completed.stderr and completed.returncode == 141, completed.stderr
