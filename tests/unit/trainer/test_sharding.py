"""Sharded training paths that run without GPUs: checkpoint_best written from the gathered
full state (accelerator.get_state_dict, as under FSDP/DeepSpeed) loading with from_pretrained."""
from __future__ import annotations

from pathlib import Path

import torch
from transformers import BartForConditionalGeneration

from tests.helpers import tiny_bart_config
from textbox.trainer import checkpoint, sharding


class _Tokenizer:
    def save_pretrained(self, directory: Path) -> None:
        (Path(directory) / "tokenizer_config.json").write_text("{}")


def test_checkpoint_from_the_gathered_state_loads_with_from_pretrained(tmp_path, monkeypatch, fresh_accelerate_state):
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = BartForConditionalGeneration(tiny_bart_config(vocab_size=50, d_model=16, encoder_layers=1,
                                                          decoder_layers=1, encoder_ffn_dim=32, decoder_ffn_dim=32,
                                                          max_position_embeddings=32))
    prepared = accelerator.prepare(model)
    gathered = []
    monkeypatch.setattr(sharding, "is_sharded", lambda _: True)  # the FSDP/DeepSpeed branch of save_model
    real = accelerator.get_state_dict
    monkeypatch.setattr(accelerator, "get_state_dict", lambda m: gathered.append(m) or real(m))
    checkpoint.save_model(accelerator, prepared, _Tokenizer(), tmp_path / "checkpoint_best")
    assert gathered == [prepared]  # the state came from accelerate's gathering, not the module's own
    loaded = BartForConditionalGeneration.from_pretrained(tmp_path / "checkpoint_best")
    expected = model.state_dict()
    for name, tensor in loaded.state_dict().items():
        assert torch.equal(tensor, expected[name]), name
    assert (tmp_path / "checkpoint_best" / "tokenizer_config.json").is_file()


def test_resume_files_follow_the_distribution_type(fresh_accelerate_state):
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    assert checkpoint.resume_model_files(accelerator) == ["model.safetensors", "optimizer.bin"]
