"""Generation settings end to end: num_return_sequences=k keeps each example's k generations with that example
(generation_all.txt, k lines per example; generation.txt and the metrics use the best one), with 1 and 2
processes and for --input_file, equal to model.generate on the same checkpoint; a bad setting stops the run
before training with exit 2."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.helpers import (TINY_MODEL_ARGS, make_copy_dataset, run_in_process, run_script_in_process,
                           run_two_processes)
from textbox.decoding.detokenize import one_line

pytestmark = pytest.mark.slow

GENERATION = {"num_beams": 3, "num_return_sequences": 3, "no_repeat_ngram_size": 2}
TGT_LEN = 16  # TINY_MODEL_ARGS: generation's max_new_tokens defaults to it


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("generation")
    data = make_copy_dataset(work / "copy")
    # 32 epochs: with 24 (fused AdamW), seed 2020's loss chose a checkpoint writing 2 distinct outputs for 13
    # examples, too few for the mix-up checks below (11-13 with 32 epochs, seeds 1, 3, 7, 42, 2020)
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--epochs=32", "--filename=run",
            f"--generation_kwargs={GENERATION}", "--metrics=['bleu']", "--metrics_for_best_model=['loss', 'bleu-1']",
            "--valid_strategy=epoch", "--valid_steps=4"]
    assert run_in_process(args, cwd=work) == 0  # the tests below run the user's commands on its checkpoint
    return work / "saved" / "run"


def _reference(checkpoint: Path, sources_file: Path) -> list[list[str]]:
    """model.generate(num_return_sequences=k) on the checkpoint, one example at a time."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(checkpoint).eval()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    expected = []
    with torch.no_grad():
        for source in sources_file.read_text().splitlines():
            output = model.generate(**tokenizer([source], return_tensors="pt"), **GENERATION, max_new_tokens=TGT_LEN)
            expected.append([one_line(text) for text in tokenizer.batch_decode(output, skip_special_tokens=True)])
    assert all(len(texts) == GENERATION["num_return_sequences"] for texts in expected)
    return expected


def _lines(path: Path) -> list[str]:
    return path.read_text().split("\n")[:-1]


def _flat(sequences: list[list[str]]) -> list[str]:
    return [text for texts in sequences for text in texts]


def _check_outputs(run_dir: Path, expected: list[list[str]]) -> None:
    assert _lines(run_dir / "generation_all.txt") == _flat(expected)
    assert _lines(run_dir / "generation.txt") == [texts[0] for texts in expected]


def test_one_process_writes_k_lines_per_example_and_scores_the_best(trained_run: Path):
    work = trained_run.parent.parent
    expected = _reference(trained_run / "checkpoint_best", work / "copy" / "test.src")
    # examples get different outputs, and an example's k sequences differ: a mix-up cannot go unseen
    assert len({texts[0] for texts in expected}) > len(expected) // 2
    assert all(len(set(texts)) == len(texts) for texts in expected)
    _check_outputs(trained_run, expected)
    # validation scored (and wrote) the best sequence of each example, for the checkpoint it kept
    valid = _reference(trained_run / "checkpoint_best", work / "copy" / "valid.src")
    assert _lines(trained_run / "valid_generation.txt") == [texts[0] for texts in valid]
    assert "generation_all.txt" in (trained_run / "project.log").read_text()


def test_two_processes_keep_every_sequence_with_its_example(trained_run: Path):
    work = trained_run.parent.parent
    args = [f"--model_path={trained_run / 'checkpoint_best'}", f"--data_path={work / 'copy'}", "--dataset=copy",
            "--do_train=False", "--tracker=none", "--src_len=24", f"--tgt_len={TGT_LEN}", "--eval_batch_size=4",
            f"--generation_kwargs={GENERATION}", "--metrics=['bleu']", "--filename=two"]
    done = run_two_processes(args, work)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 process(es)" in (work / "saved" / "two" / "project.log").read_text()
    _check_outputs(work / "saved" / "two", _reference(trained_run / "checkpoint_best", work / "copy" / "test.src"))


@pytest.mark.parametrize("processes", [1, 2])
def test_input_file_writes_all_sequences_next_to_the_output_file(trained_run: Path, processes: int):
    """1 process: --output_file=out.txt gets the best per input, out_all.txt all k. 2 processes, stdout: the
    best per input on stdout, all k in the run directory's generation_all.txt."""
    work = trained_run.parent.parent
    sources = work / "copy" / "valid.src"
    output = work / "out.txt" if processes == 1 else "-"
    args = [f"--model_path={trained_run / 'checkpoint_best'}", "--do_train=False", "--do_valid=False",
            "--tracker=none", "--src_len=24", f"--tgt_len={TGT_LEN}", "--eval_batch_size=5",
            f"--data_path={work / 'copy'}", f"--generation_kwargs={GENERATION}", f"--input_file={sources}",
            f"--output_file={output}", f"--filename=infer{processes}"]
    done = run_script_in_process(args, cwd=work) if processes == 1 else run_two_processes(args, work)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = _reference(trained_run / "checkpoint_best", sources)
    if processes == 1:
        assert _lines(work / "out_all.txt") == _flat(expected)
        assert _lines(work / "out.txt") == [texts[0] for texts in expected]
    else:
        assert done.stdout == "".join(texts[0] + "\n" for texts in expected)
        assert _lines(work / "saved" / "infer2" / "generation_all.txt") == _flat(expected)
        assert "generation_all.txt" in (work / "saved" / "infer2" / "project.log").read_text()


def test_a_bad_generation_setting_stops_before_training(tmp_path: Path):
    """It used to train, then die at test time with a ZeroDivisionError traceback."""
    data = make_copy_dataset(tmp_path / "copy")
    # one run with both bad settings: every problem is reported at once
    done = run_script_in_process([*TINY_MODEL_ARGS, f"--data_path={data}",
                                  "--generation_kwargs={'num_beams': 0, 'num_beam': 4}"], cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    for expected in ("'num_beams' must be at least 1, got 0",
                     "unknown generation setting 'num_beam'; did you mean 'num_beams'?"):
        assert f"--generation_kwargs: {expected}" in done.stderr, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "saved").exists()
