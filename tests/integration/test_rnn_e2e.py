"""rnn, gru and lstm end to end: train a few steps, generate the test split, reload checkpoint_best with
--model_path and get the same generations."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import make_copy_dataset, run_in_process, run_script, run_script_in_process

pytestmark = pytest.mark.slow

TINY_RNN_ARGS = [
    "--config_kwargs={'embedding_size': 16, 'hidden_size': 24, 'num_layers': 1, 'dropout': 0.1}",
    "--tokenizer_kwargs={'vocab_size': 300, 'min_frequency': 1}",
    "--src_len=24", "--tgt_len=16", "--train_batch_size=16", "--eval_batch_size=16", "--learning_rate=0.01",
    "--logging_steps=2", "--tracker=none", "--dataset=copy",
]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return make_copy_dataset(tmp_path_factory.mktemp("copy") / "copy")


@pytest.mark.parametrize("cell,generation", [
    ("rnn", "{}"),
    ("gru", "{'num_beams': 3}"),
    ("lstm", "{'num_beams': 2, 'no_repeat_ngram_size': 2}"),
])
def test_train_generate_save_and_reload(cell: str, generation: str, data: Path, tmp_path: Path):
    args = [f"--model={cell}", *TINY_RNN_ARGS, f"--data_path={data}", f"--generation_kwargs={generation}"]
    # trained in this process (one thread); the reload below is a new run, as a user tests a checkpoint: for rnn a new
    # process, where textbox_rnn is registered with transformers' Auto classes only if loading the checkpoint does it
    # (this process registered it when it built the model); gru and lstm reload in this process, saving a start-up
    assert run_in_process([*args, "--max_steps=8", "--valid_strategy=step", "--valid_steps=4", "--filename=run"],
                          cwd=tmp_path) == 0
    run = tmp_path / "saved" / "run"
    generations = (run / "generation.txt").read_text().split("\n")[:-1]
    assert len(generations) == 13
    results = json.loads((run / "results.json").read_text())
    assert results["steps"] == 8 and {"loss", "bleu"} <= set(results["test"])
    log = (run / "project.log").read_text()
    assert f"model {cell}:" in log and "trainable" in log
    config = json.loads((run / "checkpoint_best" / "config.json").read_text())
    assert config["model_type"] == "textbox_rnn" and config["cell"] == cell

    # the checkpoint's tokenizer is used as saved: --tokenizer_kwargs (how to train a new one) would be refused
    reload_args = [arg for arg in args if not arg.startswith("--tokenizer_kwargs=")]
    reload = run_script if cell == "rnn" else run_script_in_process
    tested = reload([*reload_args, f"--model_path={run / 'checkpoint_best'}", "--do_train=False", "--filename=again"],
                    cwd=tmp_path)
    assert tested.returncode == 0, tested.stderr[-3000:]
    again = tmp_path / "saved" / "again"
    assert (again / "generation.txt").read_text() == (run / "generation.txt").read_text()
    assert json.loads((again / "results.json").read_text())["test"] == results["test"]
