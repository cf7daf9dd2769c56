"""run_textbox.py end to end on a tiny model: files written, outputs in order, reproducible from config.yaml."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_script, run_script_in_process

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained_run(trained_copy_run: Path) -> Path:
    """The session's shared tiny training run (tests/integration/conftest.py)."""
    return trained_copy_run


def test_run_directory_holds_every_output(trained_run: Path):
    for name in ("config.yaml", "project.log", "results.json", "generation.txt", "metrics.jsonl",
                 "valid_generation.txt", "checkpoint_best", "checkpoint_last"):
        assert (trained_run / name).exists(), name
    results = json.loads((trained_run / "results.json").read_text())
    assert set(results["test"]) >= {"bleu", "rouge-1", "rouge-2", "rouge-l", "loss"}
    assert set(results["valid"]) >= {"bleu", "loss"}
    generations = (trained_run / "generation.txt").read_text().split("\n")[:-1]
    assert len(generations) == 13
    assert all(generations) and len(set(generations)) > 6  # words, different per example: order is testable
    log = (trained_run / "project.log").read_text()
    assert "parameters" in log and "validation 3" in log


def test_the_closing_log_shows_test_examples_beside_their_references(trained_run: Path):
    from textbox.pipeline.results import example_indices

    log = (trained_run / "project.log").read_text()
    closing = log[log.index("split  figure"):]  # after the figures' table
    generations = (trained_run / "generation.txt").read_text().splitlines()
    sources = (trained_run.parent.parent / "copy" / "test.src").read_text().splitlines()
    assert "5 of 13 test examples" in closing
    for index in example_indices(13, 5):  # the default: 5, spread over the split
        assert f"[{index}] source:    {sources[index]}\n" in closing
        assert f"output:    {generations[index]}\n" in closing
    assert closing.index("output:") < closing.index("finished in")
    results = json.loads((trained_run / "results.json").read_text())
    for metric, details in results["metric_details"].items():  # how each figure was scored, after the table
        assert f"scored: {metric} by {details['package']} {details['version']}: case " in closing
    assert "|case:mixed|eff:no|tok:13a|" in closing  # sacrebleu's signature, as results.json has it


def test_checkpoint_best_loads_with_auto_classes(trained_run: Path):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(trained_run / "checkpoint_best")
    tokenizer = AutoTokenizer.from_pretrained(trained_run / "checkpoint_best")
    batch = tokenizer(["red cat"], return_tensors="pt")
    out = model.generate(**batch, max_new_tokens=5)
    assert out.shape[0] == 1


# A rerun from config.yaml reproducing the run: test_run_config_layers.py (one rerun for both files).


def test_testing_a_checkpoint_only(trained_run: Path):
    work = trained_run.parent.parent
    done = run_script_in_process([f"--model_path={trained_run / 'checkpoint_best'}", f"--data_path={work / 'copy'}",
                                  "--dataset=copy", "--do_train=False", "--filename=test_only", "--tracker=none",
                                  "--src_len=24", "--tgt_len=16", "--eval_batch_size=16", "--show_examples=0"],
                                 cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (work / "saved" / "test_only" / "generation.txt").read_text() == \
        (trained_run / "generation.txt").read_text()
    log = (work / "saved" / "test_only" / "project.log").read_text()
    assert "split  figure" in log and "test examples" not in log  # --show_examples=0 shows none


# 2 processes testing checkpoint_best give the outputs of 1 process, in order: test_ctranslate2_e2e.py's
# test_ctranslate2_end_to_end (one launch on this run for both files).


def test_bad_config_exits_2_without_writing(tmp_path: Path):
    done = run_script_in_process(["--lerning_rate=1", "--dataset=nope"], cwd=tmp_path)
    assert done.returncode == 2
    assert "did you mean 'learning_rate'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "saved").exists()


def test_inference_on_a_file_and_on_stdin_keeps_order(trained_run: Path):
    """--input_file/--output_file generate for arbitrary inputs exactly as the test pass does for the test split."""
    work = trained_run.parent.parent
    args = [f"--model_path={trained_run / 'checkpoint_best'}", "--do_train=False", "--do_valid=False",
            "--tracker=none", "--src_len=24", "--tgt_len=16", "--eval_batch_size=16", f"--data_path={work / 'copy'}"]
    expected = (trained_run / "generation.txt").read_text()
    done = run_script_in_process([*args, f"--input_file={work / 'copy' / 'test.src'}",
                                  f"--output_file={work / 'out.txt'}", "--filename=infer"], cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (work / "out.txt").read_text() == expected
    # on stdin and stdout: a process's pipes
    piped = run_script([*args, "--input_file=-", "--output_file=-", "--filename=infer_stdin"], cwd=work,
                       input=(work / "copy" / "test.src").read_text())
    assert piped.returncode == 0, piped.stderr[-3000:]
    assert piped.stdout == expected
