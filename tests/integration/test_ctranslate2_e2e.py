"""End to end with CTranslate2 decoding: a run trained with validation by generation (CTranslate2 by default for
its model), testing its checkpoint with --decoding_backend=ctranslate2 on two processes, --input_file inference;
outputs one per example in order and equal to transformers' decoding, one conversion per checkpoint content, the
checkpoint directory left byte for byte as it was; a checkpoint with a BERT tokenizer decoded on CTranslate2, and an
explicit ctranslate2 its checkpoint rules out refused before training."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from tests.helpers import make_copy_dataset, run_in_process, run_script_in_process, run_two_processes

pytestmark = pytest.mark.slow


def _digests(directory: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(directory.iterdir())}


def test_ctranslate2_end_to_end(trained_copy_run: Path, tmp_path: Path):
    """On the shared run (tests/integration/conftest.py), which validated and tested with CTranslate2 (the default
    backend for its BART-shaped model); the runs below convert into their own cache (--cache_dir). Its two-process
    test holds docs/invariants.md's "one process and two give the same outputs, in order" for both engines."""
    data = trained_copy_run.parent.parent / "copy"
    common = [f"--data_path={data}", "--dataset=copy", "--tracker=none", f"--cache_dir={tmp_path / 'cache'}",
              "--src_len=24", "--tgt_len=16"]
    log = (trained_copy_run / "project.log").read_text()
    assert "decoding with ctranslate2: --decoding_backend=auto: bart converts (translator)" in log
    assert re.search(r"validation 25 at step 300: loss \S+ bleu ", log)  # validation by generation (BLEU)
    best = trained_copy_run / "checkpoint_best"
    before = _digests(best)

    testing = [f"--model_path={best}", *common, "--do_train=False", "--eval_batch_size=4"]
    two = run_two_processes([*testing, "--decoding_backend=ctranslate2", "--filename=two"], tmp_path)
    assert two.returncode == 0, two.stderr[-3000:]
    two_log = (tmp_path / "saved" / "two" / "project.log").read_text()
    assert "2 process(es)" in two_log
    assert "decoding with ctranslate2: --decoding_backend=ctranslate2: bart converts (translator)" in two_log

    reference = run_script_in_process([*testing, "--decoding_backend=transformers", "--filename=reference"],
                                      cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr[-3000:]
    expected = (tmp_path / "saved" / "reference" / "generation.txt").read_text()
    assert len(expected.splitlines()) == 13 and len(expected.split()) > 13  # words, not empty lines
    assert (tmp_path / "saved" / "two" / "generation.txt").read_text() == expected
    # and those of the run's own test pass, on one process (CTranslate2 there too)
    assert (tmp_path / "saved" / "two" / "generation.txt").read_text() == \
        (trained_copy_run / "generation.txt").read_text()

    inference = run_script_in_process([*testing, "--decoding_backend=ctranslate2", f"--input_file={data / 'test.src'}",
                                       f"--output_file={tmp_path / 'out.txt'}", "--filename=infer"], cwd=tmp_path)
    assert inference.returncode == 0, inference.stderr[-3000:]
    assert (tmp_path / "out.txt").read_text() == expected
    infer_log = (tmp_path / "saved" / "infer" / "project.log").read_text()
    assert "decoding with ctranslate2" in infer_log and "converted the model" not in infer_log  # cached
    assert _digests(best) == before


def test_explicit_ctranslate2_is_refused_before_training(tmp_path: Path):
    data = make_copy_dataset(tmp_path / "copy")
    done = run_script_in_process(["--model=gru", f"--data_path={data}", "--dataset=copy",
                                  "--decoding_backend=ctranslate2"], cwd=tmp_path)
    assert done.returncode == 2
    assert "--model=gru is an RNN, which CTranslate2 cannot run" in done.stderr
    assert not (tmp_path / "saved").exists()


def test_a_bert_tokenizer_checkpoint_validates_and_tests_on_ctranslate2(tmp_path: Path):
    """A BART config saved with a BERT tokenizer (no bos/eos strings, as Chinese BART checkpoints ship) failed after
    training ("type must be string, but is null") and lost its test pass. It now says up front, before training,
    that CTranslate2 decodes, validates and tests on it, and ends with its figures."""
    from tests.bert_vocab_helpers import save_bert_vocab_checkpoint

    checkpoint = save_bert_vocab_checkpoint(tmp_path / "checkpoint", "bart")
    data = make_copy_dataset(tmp_path / "copy", {"train": 32, "valid": 8, "test": 8})
    code = run_in_process([f"--model_path={checkpoint}", f"--data_path={data}", "--dataset=copy", "--max_steps=2",
                           "--valid_strategy=step", "--valid_steps=1", "--metrics=['bleu']",
                           "--metrics_for_best_model=['bleu']", "--src_len=24", "--tgt_len=8", "--tracker=none",
                           "--filename=run"], cwd=tmp_path)
    assert code == 0
    run = tmp_path / "saved" / "run"
    log = (run / "project.log").read_text()
    chosen = log.index("decoding with ctranslate2: --decoding_backend=auto: bart converts (translator)")
    assert chosen < log.index("training: 32 examples") and "validation 2 at step 2: loss" in log
    assert "decoding with transformers" not in log
    assert set(json.loads((run / "results.json").read_text())["test"]) >= {"loss", "bleu"}
    assert len((run / "generation.txt").read_text().splitlines()) == 8


def test_explicit_ctranslate2_the_checkpoint_rules_out_is_refused_before_training(tmp_path: Path, capsys):
    """A checkpoint whose generation config sets what CTranslate2 has no equal for was refused only when the first
    validation decoded, after training had started; now before anything is written."""
    from tests.bert_vocab_helpers import save_bert_vocab_checkpoint

    checkpoint = save_bert_vocab_checkpoint(tmp_path / "checkpoint", "bart", repetition_penalty=1.3)
    data = make_copy_dataset(tmp_path / "copy", {"train": 32, "valid": 8, "test": 8})
    code = run_in_process([f"--model_path={checkpoint}", f"--data_path={data}", "--dataset=copy",
                           "--decoding_backend=ctranslate2", "--src_len=24", "--tgt_len=8"], cwd=tmp_path)
    assert code == 2
    error = capsys.readouterr().err
    assert "--decoding_backend=ctranslate2: repetition_penalty=1.3: transformers also penalises" in error
    assert "Traceback" not in error and "training:" not in error
    assert not (tmp_path / "saved").exists()
