"""run_textbox.py with only --model_path and a dataset: tiny BART, T5, GPT-2 and BERT checkpoints built here and
saved like hub checkpoints; the family is read from the checkpoint and its yaml is in force (the learning rate the
trainer really used, step by step); a contradicting --model stops before anything is written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.causal_helpers import save_tiny_causal_lm
from tests.conftest import PROJECT_ROOT
from tests.helpers import make_copy_dataset, run_script_in_process, tiny_bart_config

pytestmark = pytest.mark.slow

STEPS = 4
# Sizes and run length only: nothing here names a model or an optimiser setting.
SMALL = [f"--max_steps={STEPS}", "--logging_steps=1", "--train_batch_size=4", "--eval_batch_size=4",
         "--src_len=24", "--tgt_len=12", "--do_test=False", "--tracker=none"]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("model-path-only")


@pytest.fixture(scope="module")
def data(work: Path) -> Path:
    return make_copy_dataset(work / "copy", {"train": 16, "valid": 4, "test": 4})


def _texts(data: Path) -> list[str]:
    return [*(data / "train.src").read_text().splitlines(), *(data / "train.tgt").read_text().splitlines()]


def _bpe(data: Path, work: Path):
    from textbox.model.tokenizer import train_bpe_tokenizer

    return train_bpe_tokenizer(_texts(data), vocab_size=300, min_frequency=1, cache_dir=work / "tokenizer-cache",
                               log=lambda _: None)


def save_bart(path: Path, data: Path, work: Path) -> Path:
    from transformers import BartForConditionalGeneration

    tokenizer = _bpe(data, work)
    BartForConditionalGeneration(tiny_bart_config(tokenizer, encoder_layers=1, decoder_layers=1)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def save_t5(path: Path, data: Path, work: Path) -> Path:
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = _bpe(data, work)
    T5ForConditionalGeneration(T5Config(vocab_size=len(tokenizer), d_model=32, d_ff=64, d_kv=16, num_layers=1,
                                        num_heads=2, pad_token_id=tokenizer.pad_token_id,
                                        eos_token_id=tokenizer.eos_token_id,
                                        decoder_start_token_id=tokenizer.pad_token_id)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def save_gpt2(path: Path, data: Path, work: Path) -> Path:
    return save_tiny_causal_lm(path, _texts(data), "gpt2", work / "tokenizer-cache")


def save_bert(path: Path, data: Path, work: Path) -> Path:
    """A one-layer BERT (masked LM head, as bert-base ships) with a word-level WordPiece vocabulary."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    words = sorted({word for line in _texts(data) for word in line.split()})
    path.mkdir(parents=True)
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(path / "vocab.txt"))
    BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=64,
                               pad_token_id=tokenizer.pad_token_id)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def expected_learning_rates(family: str, steps: int) -> list[float]:
    """The schedule configs/model/<family>.yaml asks for, computed by transformers from the yaml alone."""
    import torch
    from transformers import get_scheduler

    settings = yaml.safe_load((PROJECT_ROOT / "configs" / "model" / f"{family}.yaml").read_text())
    names = {"constant": "constant_with_warmup", "linear": "linear", "cosine": "cosine", "inverse_sqrt": "inverse_sqrt"}
    warmup = settings.get("warmup_steps") or -(-settings.get("warmup_ratio", 0.0) * steps // 1)
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=settings["learning_rate"])
    scheduler = get_scheduler(names[settings["scheduler"]], optimizer, num_warmup_steps=int(warmup),
                              num_training_steps=steps)
    rates = []
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr()[0])
    return rates


@pytest.mark.parametrize("builder, family", [(save_bart, "bart"), (save_t5, "t5"), (save_gpt2, "gpt2"),
                                             (save_bert, "bert2bert")])
def test_model_path_alone_chooses_the_family_and_its_yaml(work, data, builder, family):
    checkpoint = builder(work / f"hub-{family}", data, work)
    done = run_script_in_process([f"--model_path={checkpoint}", f"--data_path={data}", *SMALL,
                                  f"--filename={family}"], cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = work / "saved" / family
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["model"] == family and saved["dataset"] == "copy"
    log = (run_dir / "project.log").read_text()
    assert f"model family '{family}' chosen from checkpoint {checkpoint / 'config.json'}" in log
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rates = [row["lr"] for row in rows if row["split"] == "train"]
    assert rates == pytest.approx(expected_learning_rates(family, STEPS), rel=1e-6)


def test_a_contradicting_model_stops_before_anything_is_written(work, data):
    checkpoint = work / "hub-bart"
    if not checkpoint.exists():
        save_bart(checkpoint, data, work)
    before = sorted(p.name for p in (work / "saved").iterdir()) if (work / "saved").exists() else []
    done = run_script_in_process(["--model=t5", f"--model_path={checkpoint}", f"--data_path={data}", *SMALL,
                                  "--filename=contradiction"], cwd=work)
    assert done.returncode == 2
    assert f"--model=t5 contradicts --model_path={checkpoint}" in done.stderr and "--model=bart" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (work / "saved" / "contradiction").exists()
    assert (sorted(p.name for p in (work / "saved").iterdir()) if (work / "saved").exists() else []) == before
