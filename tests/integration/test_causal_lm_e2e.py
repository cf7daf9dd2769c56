"""run_textbox.py end to end with decoder-only LMs (a tiny GPT-2 and a tiny Llama trained from scratch): train a
few steps, generate one line per test example, save checkpoint_best, reload it for testing alone."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.causal_helpers import save_tiny_causal_lm
from tests.helpers import make_copy_dataset, run_in_process, run_script_in_process

pytestmark = pytest.mark.slow

TEST_EXAMPLES = 13
LENGTHS = ["--src_len=24", "--tgt_len=16", "--eval_batch_size=16", "--tracker=none"]


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def trained_run(request, tmp_path_factory) -> Path:
    """A from-scratch run of --model=<style> on the reverse-the-words task (2 epochs of 12 steps)."""
    style = request.param
    work = tmp_path_factory.mktemp(f"causal-{style}")
    data = make_copy_dataset(work / "copy", {"train": 96, "valid": 16, "test": TEST_EXAMPLES})
    texts = [*(data / "train.src").read_text().split("\n"), *(data / "train.tgt").read_text().split("\n")]
    base = save_tiny_causal_lm(work / f"tiny-{style}", texts, style, work / "tokenizer-cache")
    args = [f"--model={style}", f"--model_path={base}", "--from_scratch=True", f"--data_path={data}",
            "--dataset=copy", "--epochs=2", "--filename=run", *LENGTHS, "--train_batch_size=8",
            "--learning_rate=0.003", "--scheduler=constant", "--warmup_steps=0", "--logging_steps=2"]
    assert run_in_process(args, cwd=work) == 0  # reloaded below from its files, as a user tests a checkpoint
    return work / "saved" / "run"


def test_trains_generates_and_saves(trained_run: Path):
    for name in ("config.yaml", "project.log", "results.json", "generation.txt", "metrics.jsonl",
                 "checkpoint_best", "checkpoint_last"):
        assert (trained_run / name).exists(), name
    results = json.loads((trained_run / "results.json").read_text())
    assert results["steps"] == 24
    assert set(results["test"]) >= {"bleu", "rouge-l", "loss"}
    generations = (trained_run / "generation.txt").read_text().split("\n")
    assert generations[-1] == "" and len(generations[:-1]) == TEST_EXAMPLES
    log = (trained_run / "project.log").read_text()
    assert "parameters" in log and "trainable" in log
    rows = [json.loads(line) for line in (trained_run / "metrics.jsonl").read_text().splitlines()]
    first_train_loss = next(row["loss"] for row in rows if row["split"] == "train")
    assert results["valid"]["loss"] < first_train_loss  # it learned something from the target-only loss


def test_checkpoint_best_reloads_for_testing_with_the_same_generations(trained_run: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(trained_run / "checkpoint_best")
    tokenizer = AutoTokenizer.from_pretrained(trained_run / "checkpoint_best")
    assert not model.config.is_encoder_decoder and tokenizer.pad_token_id == tokenizer.eos_token_id

    work = trained_run.parent.parent
    done = run_script_in_process([f"--model={model.config.model_type}",
                                  f"--model_path={trained_run / 'checkpoint_best'}", f"--data_path={work / 'copy'}",
                                  "--dataset=copy", "--do_train=False", "--filename=test_only", *LENGTHS], cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    tested = work / "saved" / "test_only"
    assert (tested / "generation.txt").read_text() == (trained_run / "generation.txt").read_text()
    first = json.loads((trained_run / "results.json").read_text())["test"]
    again = json.loads((tested / "results.json").read_text())["test"]
    assert again == pytest.approx(first)
