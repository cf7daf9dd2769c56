"""A TextBox 2.0 user's command runs unchanged: its overall.yaml, samsum.yaml and a model yaml (transformer.yaml's
shape, tiny sizes) as --config_files on a tiny local samsum copy, offline on a CPU."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT_ROOT
from tests.helpers import run_script_in_process

TEXTBOX2 = PROJECT_ROOT / "tests" / "fixtures" / "textbox2"
_DIALOGUES = [("Amy: are you coming tonight? Bob: yes, at eight.", "Bob is coming tonight at eight."),
              ("Tom: I lost my keys. Ann: check the car.", "Tom lost his keys and Ann suggests the car."),
              ("Kim: lunch? Lee: sure, pizza.", "Kim and Lee will have pizza for lunch."),
              ("Sam: the train is late. Joe: again?", "Sam's train is late again.")]


@pytest.mark.slow
def test_textbox_overall_samsum_and_model_yamls_train_and_test_a_tiny_model(tmp_path: Path):
    from textbox.model.tokenizer import train_bpe_tokenizer

    data = tmp_path / "dataset" / "samsum"  # TextBox's layout: dataset/<name>/{split}.{src,tgt}
    data.mkdir(parents=True)
    for split, repeat in (("train", 6), ("valid", 1), ("test", 1)):
        (data / f"{split}.src").write_text("".join(f"{src}\n" for src, _ in _DIALOGUES * repeat))
        (data / f"{split}.tgt").write_text("".join(f"{tgt}\n" for _, tgt in _DIALOGUES * repeat))
    tokenizer = train_bpe_tokenizer([text for pair in _DIALOGUES for text in pair], vocab_size=300, min_frequency=1,
                                    cache_dir=tmp_path / "cache", log=print)
    tokenizer.save_pretrained(tmp_path / "tokenizer")  # offline stand-in for TextBox's facebook/bart-base

    result = run_script_in_process(["--config_files", str(TEXTBOX2 / "overall.yaml"), str(TEXTBOX2 / "samsum.yaml"),
                                    str(TEXTBOX2 / "transformer.yaml"), "--model=transformer", "--dataset=samsum",
                                    "--data_path=dataset/samsum", f"--tokenizer_path={tmp_path / 'tokenizer'}",
                                    f"--vocab_size={len(tokenizer)}", "--use_gpu=False", "--wandb=disabled",
                                    "--epochs=1", "--filename=run"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = tmp_path / "saved" / "run"
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["learning_rate"] == 3e-5 and saved["config_kwargs"]["d_model"] == 32
    assert saved["tokenizer_path"] == str(tmp_path / "tokenizer") and saved["tracker"] == "none"
    results = json.loads((run_dir / "results.json").read_text())
    assert {"rouge-1", "rouge-2", "rouge-l"} <= set(results["test"])
    assert len((run_dir / "generation.txt").read_text().splitlines()) == len(_DIALOGUES)
    log = (run_dir / "project.log").read_text()
    assert "TextBox 2.0's 'rouge_type' in" in log and "TextBox 2.0's --wandb='disabled' -> tracker='none'" in log
