"""--attn_implementation on a CUDA GPU (run by benchmarks/gpu_check.sh; skipped without CUDA): auto keeps SDPA for
bf16 there (eager is chosen for bf16 on a CPU only), and SDPA's CUDA kernels (and flash attention 2, where
flash-attn is installed) compute the logits of eager attention.

Tolerances, as relative error of the logits (norm of the difference over eager's norm): in float32 the kernels differ
by summation order alone (1e-4; torch leaves TF32 off for matrix products by default); in bf16 both sides round
every product to 8 bits of mantissa (~0.4%), which 2 layers of attention and the output projection compound: 2e-2.
A wrong mask (padding attended to) or a missing scale is off by far more."""
from __future__ import annotations

import importlib.util

import pytest

pytestmark = pytest.mark.cuda

TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}


def _logits(model, dtype):
    import torch

    model = model.to("cuda", getattr(torch, dtype)).eval()
    ids = torch.tensor([[5, 9, 14, 20, 11, 2], [7, 8, 9, 2, 1, 1]], device="cuda")  # the second one padded
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=(ids != 1).long(), labels=ids[:, :4].contiguous()).logits
    return logits.float().cpu()


def _relative_error(found, reference) -> float:
    return float((found - reference).norm() / reference.norm())


def test_auto_keeps_sdpa_for_bf16_on_a_gpu(tiny_config, train_split):
    from textbox.model.build import build_model

    built = build_model(tiny_config(mixed_precision="bf16"), train_split)
    assert built.model.config._attn_implementation == "sdpa"


@pytest.mark.parametrize("dtype", sorted(TOLERANCE))
def test_sdpa_computes_eager_attentions_logits_on_the_gpu(saved_bart, tiny_config, dtype):
    from textbox.model.build import build_model

    logits = {asked: _logits(build_model(tiny_config(model_path=str(saved_bart), attn_implementation=asked),
                                         None).model, dtype) for asked in ("eager", "sdpa")}
    assert _relative_error(logits["sdpa"], logits["eager"]) < TOLERANCE[dtype]


@pytest.mark.skipif(importlib.util.find_spec("flash_attn") is None,
                    reason="flash attention 2 needs the flash-attn package (not in the test extra)")
def test_flash_attention_2_computes_eager_attentions_logits(saved_bart, tiny_config):
    """flash attention runs in half precision only (bf16 here); the framework offers no key for it yet
    (--attn_implementation is eager or sdpa): this shows whether one would be worth adding."""
    import torch

    from textbox.model.attention import set_attention
    from textbox.model.build import build_model

    eager = _logits(build_model(tiny_config(model_path=str(saved_bart), attn_implementation="eager"), None).model,
                    "bfloat16")
    model = build_model(tiny_config(model_path=str(saved_bart)), None).model.to("cuda", torch.bfloat16)
    assert set_attention(model, "flash_attention_2")
    assert _relative_error(_logits(model, "bfloat16"), eager) < TOLERANCE["bfloat16"]
