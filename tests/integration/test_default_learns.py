"""The embedded default task (pydoc) is learnable: after training on a small slice, test metrics are clearly
better than those of the same model untrained."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_script

pytestmark = pytest.mark.slow

SMALL = ["--model=transformer", "--dataset=pydoc", "--quick_test=1500", "--src_len=64", "--tgt_len=24",
         "--tracker=none", "--eval_batch_size=64"]


def test_trained_beats_untrained_on_a_pydoc_slice(tmp_path: Path):
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    # 2 epochs of 47 steps (about 25 s of training): the margins below held with room to spare (test loss 5.9 vs
    # 8.9 untrained, rouge-1 8.4 vs 0, bleu-1 11.1 vs 0); after 1 epoch the model still wrote nothing (rouge-1 0)
    trained = run_script([*SMALL, "--epochs=2", "--train_batch_size=32", "--learning_rate=0.002",
                          "--warmup_steps=50", "--filename=trained"], cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr[-3000:]
    best = tmp_path / "saved" / "trained" / "checkpoint_best"

    untrained_dir = tmp_path / "untrained"
    model = AutoModelForSeq2SeqLM.from_config(AutoConfig.from_pretrained(best))
    model.generation_config = AutoModelForSeq2SeqLM.from_pretrained(best).generation_config
    model.save_pretrained(untrained_dir)
    for name in best.iterdir():
        if "token" in name.name:
            shutil.copy(name, untrained_dir / name.name)
    untrained = run_script([*SMALL, f"--model_path={untrained_dir}", "--do_train=False", "--filename=untrained"],
                           cwd=tmp_path)
    assert untrained.returncode == 0, untrained.stderr[-3000:]

    after = json.loads((tmp_path / "saved" / "trained" / "results.json").read_text())["test"]
    before = json.loads((tmp_path / "saved" / "untrained" / "results.json").read_text())["test"]
    assert after["loss"] < before["loss"] - 1.0  # perplexity several times lower
    assert after["rouge-1"] > before["rouge-1"] + 4.0, (before, after)
    assert after["bleu-1"] > before["bleu-1"] + 2.0, (before, after)
