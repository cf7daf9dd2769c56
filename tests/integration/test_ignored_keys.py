"""End to end: a key the model's builder cannot honour, or a damaged checkpoint, stops run_textbox.py with exit 2
and one message before anything is written; --from_scratch=True with a checkpoint really starts from new weights.
Each run is run_textbox.py's entry in this process (its exit code and stderr, as a subprocess would give them)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from tests.helpers import make_copy_dataset, run_script_in_process, tiny_bart_config

pytestmark = pytest.mark.slow

ARGS = ["--dataset=copy", "--src_len=24", "--tgt_len=16", "--train_batch_size=8", "--eval_batch_size=16",
        "--tracker=none", "--metrics=['bleu']", "--filename=run"]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """A copy dataset and a tiny BART checkpoint (save_pretrained, hub-like) with a BPE tokenizer trained on it."""
    from transformers import BartForConditionalGeneration

    from textbox.model.tokenizer import train_bpe_tokenizer

    root = tmp_path_factory.mktemp("keys")
    data = make_copy_dataset(root / "copy")
    texts = (data / "train.src").read_text().splitlines() + (data / "train.tgt").read_text().splitlines()
    tokenizer = train_bpe_tokenizer(texts, 300, 1, cache_dir=root / "cache", log=lambda _: None)
    torch.manual_seed(0)
    model = BartForConditionalGeneration(tiny_bart_config(tokenizer, encoder_layers=1, decoder_layers=1))
    model.save_pretrained(root / "bart")
    tokenizer.save_pretrained(root / "bart")
    return root


def _weights(path: Path) -> dict[str, torch.Tensor]:
    from transformers import AutoModelForSeq2SeqLM

    return dict(AutoModelForSeq2SeqLM.from_pretrained(path).named_parameters())


def test_a_key_the_builder_cannot_honour_exits_2_before_anything_is_written(work: Path, tmp_path: Path):
    done = run_script_in_process([*ARGS, "--model=transformer", f"--model_path={work / 'bart'}",
                                  f"--data_path={work / 'copy'}", "--tokenizer_kwargs={'vocab_size': 500}",
                                  "--mask_ratio=0.5"], cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "--tokenizer_kwargs sets how --model=transformer trains a new BPE tokenizer" in done.stderr
    assert "drop --tokenizer_kwargs" in done.stderr
    assert "--mask_ratio is a setting of denoising pre-training" in done.stderr
    assert not (tmp_path / "saved").exists()


def test_from_scratch_with_a_checkpoint_trains_new_weights(work: Path, tmp_path: Path):
    # a learning rate of 1e-9 barely moves weights: what checkpoint_best holds shows where training started
    done = run_script_in_process([*ARGS, "--model=bart", f"--model_path={work / 'bart'}",
                                  f"--data_path={work / 'copy'}", "--from_scratch=True", "--learning_rate=1e-9",
                                  "--max_steps=1", "--valid_strategy=step", "--valid_steps=1", "--do_test=False"],
                                 cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    pretrained, trained = _weights(work / "bart"), _weights(tmp_path / "saved" / "run" / "checkpoint_best")
    assert trained.keys() == pretrained.keys()
    assert max((trained[name] - pretrained[name]).abs().max().item() for name in trained) > 0.01


def test_a_damaged_weights_file_exits_2_naming_it_and_leaves_it_unchanged(work: Path, tmp_path: Path):
    damaged = tmp_path / "damaged"
    shutil.copytree(work / "bart", damaged)
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:weights.stat().st_size // 2])
    before = weights.read_bytes()
    done = run_script_in_process([*ARGS, "--model=bart", f"--model_path={damaged}", f"--data_path={work / 'copy'}"],
                                 cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert f"file {weights} is damaged" in done.stderr and "truncated" in done.stderr
    assert weights.read_bytes() == before
    assert not (tmp_path / "saved").exists()


def test_damaged_weights_only_torch_can_read_exit_2_naming_them(work: Path, tmp_path: Path):
    """Pickled .bin weights are found when loading fails (after the run directory exists: see the report)."""
    damaged = tmp_path / "pickled"
    damaged.mkdir()
    for name in (work / "bart").iterdir():
        if name.name != "model.safetensors":
            shutil.copy(name, damaged / name.name)
    weights = damaged / "pytorch_model.bin"
    torch.save(_weights(work / "bart"), weights)
    weights.write_bytes(weights.read_bytes()[:weights.stat().st_size // 2])
    done = run_script_in_process([*ARGS, "--model=bart", f"--model_path={damaged}", f"--data_path={work / 'copy'}",
                                  "--do_train=False"], cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert f"file {weights} is damaged" in done.stderr
