"""--quantization on a CUDA GPU (run by benchmarks/gpu_check.sh; skipped without CUDA or bitsandbytes): the
framework's loading path (textbox.model.quantization through build_model) puts bitsandbytes' NF4 and INT8 layers on
the GPU; NF4 computes what the same NF4 weights compute on the CPU, INT8 stays close to the full-precision model;
QLoRA (NF4 + LoRA) trains through the Trainer on the GPU: finite losses, the adapter moves, the frozen 4-bit base
does not, and checkpoint_best holds the adapter with the record that quantises its base again.

Tolerances, as relative error of the logits (norm of the difference over the norm of the reference): NF4 on the GPU
against NF4 on the CPU dequantises to the same weights, so only float32 summation order differs (1e-3); INT8 against
float32 rounds each weight row to 127 levels of its largest value (LLM.int8, activations too): ~1% per product,
checked at 5% (an unquantised or mis-scaled layer is off by far more, and NF4's 16 levels by ~10%)."""
from __future__ import annotations

import json
import logging

import pytest

from tests.helpers import train_losses, user_config

pytestmark = pytest.mark.cuda

IDS = [[5, 9, 14, 20, 2], [7, 8, 9, 2, 1]]


@pytest.fixture
def bitsandbytes():
    return pytest.importorskip("bitsandbytes", reason="--quantization needs bitsandbytes (pip install -e \".[test]\")")


def _built(saved_bart, tmp_path, **keys):
    from textbox.model.build import build_model

    return build_model(user_config(model="bart", model_path=str(saved_bart), cache_dir=str(tmp_path), src_len=24,
                                   tgt_len=8, **keys), None)


def _logits(model):
    import torch

    device = next(model.parameters()).device
    ids = torch.tensor(IDS, device=device)
    with torch.no_grad():
        return model.eval()(input_ids=ids, attention_mask=(ids != 1).long(), labels=ids[:, :4].contiguous()).logits


def _relative_error(found, reference) -> float:
    found, reference = found.float().cpu(), reference.float().cpu()
    return float((found - reference).norm() / reference.norm())


def test_nf4_loads_onto_the_gpu_and_computes_as_on_the_cpu(bitsandbytes, saved_bart, tmp_path, monkeypatch):
    from textbox.model import quantization

    keys = {"quantization": "nf4", "double_quantization": True, "efficient_methods": ["lora"]}
    on_gpu = _built(saved_bart, tmp_path, **keys).model
    layers = [module for module in on_gpu.modules() if isinstance(module, bitsandbytes.nn.Linear4bit)]
    assert layers and {layer.weight.device.type for layer in layers} == {"cuda"}
    assert all(layer.weight.quant_state.quant_type == "nf4" for layer in layers)
    monkeypatch.setattr(quantization, "_device", lambda: "cpu")  # the same build, placed on the CPU
    on_cpu = _built(saved_bart, tmp_path, **keys).model
    assert _relative_error(_logits(on_gpu), _logits(on_cpu)) < 1e-3


def test_int8_loads_onto_the_gpu_close_to_full_precision(bitsandbytes, saved_bart, tmp_path):
    int8 = _built(saved_bart, tmp_path, quantization="int8", efficient_methods=["lora"]).model
    layers = [module for module in int8.modules() if isinstance(module, bitsandbytes.nn.Linear8bitLt)]
    assert layers and {layer.weight.device.type for layer in layers} == {"cuda"}
    full = _built(saved_bart, tmp_path).model.to("cuda")
    assert _relative_error(_logits(int8), _logits(full)) < 5e-2


def test_qlora_trains_on_the_gpu(bitsandbytes, saved_bart, train_split, tmp_path,
                                 fresh_accelerate_state):
    import torch
    from accelerate import Accelerator

    from textbox.data.collate import Seq2SeqCollator
    from textbox.model.quantization import QUANTIZATION_RECORD, Quantization
    from textbox.trainer.context import RunContext, TrainerContext
    from textbox.trainer.loop import Trainer

    keys = {"quantization": "nf4", "efficient_methods": ["lora"], "mixed_precision": "bf16"}
    built = _built(saved_bart, tmp_path, **keys)
    tokenizer = built.tokenizer
    base = next(module for module in built.model.modules() if isinstance(module, bitsandbytes.nn.Linear4bit))
    frozen = base.weight.data.clone()
    adapter = {name: p.detach().clone() for name, p in built.model.named_parameters() if p.requires_grad}
    assert adapter and all("lora_" in name for name in adapter)

    sources = tokenizer(train_split.sources[:32])["input_ids"]
    targets = tokenizer([references[0] for references in train_split.targets[:32]])["input_ids"]
    data = [{"input_ids": source, "labels": target} for source, target in zip(sources, targets)]
    config = user_config(model="bart", model_path=str(saved_bart), tracker="none", train_batch_size=8,
                         logging_steps=1, learning_rate=1e-2, max_steps=3, src_len=24, tgt_len=8, **keys)
    run = RunContext(config, Accelerator(mixed_precision="bf16"), tmp_path / "run", logging.getLogger("textbox.tests"))
    run.run_dir.mkdir()
    trainer = Trainer(TrainerContext(run, built.model, tokenizer, Seq2SeqCollator(tokenizer.pad_token_id),
                                     built.efficient))
    assert trainer.fit(data, None).step == 3
    assert all(torch.isfinite(torch.tensor(list(train_losses(run.run_dir).values()))))
    moved = {name: not torch.equal(p.detach().cpu(), adapter[name].cpu())
             for name, p in built.model.named_parameters() if name in adapter}
    assert any(moved.values())
    assert torch.equal(base.weight.data, frozen) and base.weight.device.type == "cuda"
    best = run.run_dir / "checkpoint_best"
    assert Quantization(**json.loads((best / QUANTIZATION_RECORD).read_text())) == \
        Quantization("nf4", False, "bfloat16")
    assert (best / "adapter_model.safetensors").is_file() and not (best / "model.safetensors").exists()
