"""CTranslate2 on a CUDA GPU (run by benchmarks/gpu_check.sh; skipped without CUDA, or where the installed
CTranslate2 sees no CUDA device): the engine decodes on the GPU and gives transformers' ``generate`` outputs on the
GPU, greedy and beam, for an encoder-decoder (the trained tiny BART) and a decoder-only LM (the trained tiny GPT-2).
float32 on both sides, as the CPU tests compare (test_ctranslate2.py): any difference is the engine's, not a
precision's."""
from __future__ import annotations

import copy

import pytest

from tests.unit.decoding.engines import decode, evaluator, examples, generate_on_batches

pytestmark = pytest.mark.cuda

EXAMPLES = 60
SETTINGS = {"greedy": {"num_beams": 1, "max_new_tokens": 12},
            "beam": {"num_beams": 4, "early_stopping": True, "max_new_tokens": 12}}


@pytest.fixture
def cuda_ctranslate2():
    ctranslate2 = pytest.importorskip("ctranslate2")
    if ctranslate2.get_cuda_device_count() == 0:
        pytest.skip(f"this CTranslate2 ({ctranslate2.__version__}) sees no CUDA device: a build without CUDA, or "
                    f"its CUDA runtime cannot start here")


@pytest.mark.parametrize("search", sorted(SETTINGS))
@pytest.mark.parametrize("kind", ["bart", "gpt2"])
def test_ctranslate2_on_the_gpu_decodes_as_generate_on_the_gpu(cuda_ctranslate2, kind, search, trained,
                                                               train_causal, pairs, tmp_path, fresh_accelerate_state):
    """The model is decoded where it lives, on the GPU, as a run decodes it (CTranslate2's converter is handed a
    host copy: textbox.decoding.ctranslate2_cache)."""
    from textbox.decoding import ctranslate2_engine

    model, tokenizer = trained if kind == "bart" else train_causal(kind)
    model = copy.deepcopy(model).to("cuda").eval()
    sources = [source for source, _ in pairs[:EXAMPLES]]
    settings = SETTINGS[search]
    loader = evaluator(model, tokenizer, cpu=False).loader(examples(model, tokenizer, sources))
    reference = generate_on_batches(model, tokenizer, loader, dict(settings))  # model.generate, batches on the GPU
    ours = decode(model, tokenizer, sources, settings, "ctranslate2", tmp_path / "cache", cpu=False)
    assert [key[2:4] for key in ctranslate2_engine._loaded] == [("cuda", 0)]  # the engine ran on the GPU
    assert len(ours) == EXAMPLES and any(ours)
    assert ours == reference
