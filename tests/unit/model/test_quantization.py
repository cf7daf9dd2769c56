"""--quantization: what does not combine is refused by config validation (before anything is built), naming the key
and what to do; the settings become transformers' BitsAndBytesConfig; a checkpoint's record is used when the key is
not given, and the key wins when it is; the loaded model is quantised, frozen, and keeps its 4-bit layout."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import one_problem, problems, user_config
from textbox.model import quantization
from textbox.model.quantization import Quantization

TUNED = ["--efficient_methods=['lora']"]


def test_settings_become_bitsandbytes_config():
    import torch

    nf4 = Quantization("nf4", double_quantization=True, compute_dtype="bfloat16").bitsandbytes_config()
    assert nf4.load_in_4bit and nf4.bnb_4bit_quant_type == "nf4" and nf4.bnb_4bit_use_double_quant
    assert nf4.bnb_4bit_compute_dtype == torch.bfloat16
    assert Quantization("int8").bitsandbytes_config().load_in_8bit


def test_compute_dtype_auto_follows_mixed_precision():
    values = {**dict(user_config().items()), "quantization": "fp4", "model_path": "x"}
    given = lambda key: key == "quantization"  # noqa: E731
    assert quantization.requested({**values, "mixed_precision": "bf16"}, given).compute_dtype == "bfloat16"
    assert quantization.requested(values, given) == Quantization("fp4", False, "float32")


def test_a_checkpoint_record_is_used_unless_the_key_is_given(tmp_path: Path):
    Quantization("nf4", True, "float32").save(tmp_path)
    values = {**dict(user_config().items()), "model_path": str(tmp_path)}
    assert quantization.requested(values, lambda key: False) == Quantization("nf4", True, "float32")
    assert quantization.requested(values, lambda key: key == "quantization") is None  # --quantization=none
    assert quantization.requested({**values, "quantization": "int8"}, lambda key: key == "quantization") == \
        Quantization("int8")


def test_full_fine_tuning_of_quantised_weights_is_refused(saved_bart):
    problem = one_problem("--model=bart", f"--model_path={saved_bart}", "--quantization=nf4")
    assert "--quantization=nf4: quantised weights cannot be fine-tuned themselves" in problem
    assert "--efficient_methods=['lora'] (QLoRA)" in problem
    unfrozen = one_problem("--model=bart", f"--model_path={saved_bart}", "--quantization=int8", *TUNED,
                           "--efficient_unfreeze_model=True")
    assert "without --efficient_unfreeze_model" in unfrozen
    assert not problems("--model=bart", f"--model_path={saved_bart}", "--quantization=nf4", "--do_train=False")
    assert not problems("--model=bart", f"--model_path={saved_bart}", "--quantization=nf4", *TUNED)


def test_new_weights_are_refused(saved_bart):
    new = problems("--model=transformer", "--quantization=nf4", *TUNED, "--efficient_unfreeze_model=True")[0]
    assert new.startswith("--quantization quantises the weights of a pretrained checkpoint") and \
        "[--model=transformer, new model]" in new
    scratch = problems("--model=bart", f"--model_path={saved_bart}", "--from_scratch=True", "--quantization=nf4",
                       *TUNED, "--efficient_unfreeze_model=True")
    assert any("a model built from scratch has none" in problem for problem in scratch)


def test_families_it_cannot_apply_to_are_refused(saved_bart):
    rnn = problems("--model=gru", "--quantization=int8")
    assert any("an RNN's recurrent weights are not" in problem for problem in rnn)


def test_four_bit_settings_need_four_bits(saved_bart):
    alone = one_problem("--model=bart", f"--model_path={saved_bart}", "--double_quantization=True")
    assert alone.startswith("--double_quantization is a setting of 4-bit quantisation: add --quantization=nf4")
    int8 = one_problem("--model=bart", f"--model_path={saved_bart}", "--quantization=int8", *TUNED,
                       "--quantization_compute_dtype=bfloat16")
    assert "bitsandbytes' int8 layers have neither" in int8


def test_sharded_launches_and_a_missing_package_are_refused(saved_bart, monkeypatch):
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    fsdp = [problem for problem in problems("--model=bart", f"--model_path={saved_bart}", "--quantization=nf4",
                                            *TUNED) if "--quantization" in problem]
    assert len(fsdp) == 1 and "with FSDP: sharding bitsandbytes weights" in fsdp[0]
    monkeypatch.delenv("ACCELERATE_USE_FSDP")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bitsandbytes" else real(name, *a))
    missing = one_problem("--model=bart", f"--model_path={saved_bart}", "--quantization=nf4", *TUNED)
    assert "needs the bitsandbytes package: pip install bitsandbytes" in missing


def test_the_built_model_is_quantised_frozen_and_keeps_its_layout(saved_bart, tmp_path):
    pytest.importorskip("bitsandbytes")
    import bitsandbytes
    import torch

    from textbox.model.build import build_model

    config = user_config(model="bart", model_path=str(saved_bart), quantization="nf4", efficient_methods=["lora"],
                         cache_dir=str(tmp_path), src_len=24, tgt_len=8)
    built = build_model(config, None)
    layers = [module for module in built.model.modules() if isinstance(module, bitsandbytes.nn.Linear4bit)]
    assert layers and not any(layer.support_avx512bf16_for_cpu for layer in layers)
    assert all("lora_" in name for name, p in built.model.named_parameters() if p.requires_grad)
    assert built.efficient.quantization == Quantization("nf4", False, "float32")
    built.model.eval()
    with torch.no_grad():  # an eval forward leaves the weights' layout as it was loaded
        before = layers[0].weight.data.clone()
        built.model(input_ids=torch.tensor([[5, 6, 7, 2]]), labels=torch.tensor([[5, 6, 2]]))
    assert torch.equal(layers[0].weight.data, before)
