"""TextBox 2.0's `--model=GPT2 --model_path=gpt2 --dataset=samsum` runs: samsum.yaml's src_len 1024 and tgt_len 128 are
fitted to the model's positions (here a tiny GPT-2 with 64) with a log line, and the fitted lengths are what ran:
tokenisation, decoding (CTranslate2: samsum's TextBox decoding blocks repeated trigrams, which CTranslate2 does not do
as generate does on a decoder-only model, so the run turns that off), config.yaml and results.json. It exited 2
before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.causal_helpers import POSITIONS, save_tiny_causal_lm
from tests.helpers import make_copy_dataset, run_in_process

pytestmark = pytest.mark.slow


def test_gpt2_on_samsums_settings_runs_with_the_fitted_lengths_logged_and_recorded(tmp_path: Path):
    data = make_copy_dataset(tmp_path / "samsum", {"train": 16, "valid": 4, "test": 4})
    texts = [*(data / "train.src").read_text().splitlines(), *(data / "train.tgt").read_text().splitlines()]
    base = save_tiny_causal_lm(tmp_path / "gpt2", texts, "gpt2", tmp_path / "tokenizer-cache")
    assert run_in_process(["--model=gpt2", f"--model_path={base}", "--dataset=samsum", f"--data_path={data}",
                           "--epochs=1", "--accumulation_steps=1", "--filename=run", "--tracker=none",
                           "--generation_kwargs={'no_repeat_ngram_size': 0}", "--decoding_backend=ctranslate2"],
                          tmp_path) == 0
    run = tmp_path / "saved" / "run"
    tgt_len = 128 * (POSITIONS - 1) // (1024 + 128)  # TextBox 2.0's split of the 63 positions left by the separator
    src_len = POSITIONS - 1 - tgt_len
    assert (src_len, tgt_len) == (56, 7)
    log = (run / "project.log").read_text()
    assert f"lengths fitted to the model: src_len 1024 -> {src_len}, tgt_len 128 -> {tgt_len}: this 'gpt2' model " \
           f"has {POSITIONS} positions" in log and "configs/dataset/samsum.yaml" in log
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert (saved["src_len"], saved["tgt_len"]) == (src_len, tgt_len)  # a rerun from config.yaml runs the same
    results = json.loads((run / "results.json").read_text())
    assert results["fitted_lengths"]["src_len"] == {"given": 1024, "fitted": src_len}
    assert results["fitted_lengths"]["tgt_len"] == {"given": 128, "fitted": tgt_len}
    assert "converted the model for CTranslate2" in log and len((run / "generation.txt").read_text().splitlines()) == 4
    generation = json.loads((run / "checkpoint_best" / "generation_config.json").read_text())
    assert generation["max_new_tokens"] == tgt_len  # the checkpoint decodes within the positions too
