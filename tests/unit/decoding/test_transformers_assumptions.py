"""What textbox/decoding/__init__.py relies on transformers to do by itself, so that the package adds nothing for it."""
from __future__ import annotations

import torch


def test_transformers_runs_the_encoder_once_per_source_under_beam_search(tiny_bart, batch):
    """No encoder work to save under beam search: generate encodes each source once, then repeats the output."""
    encoder_batches = []
    hook = tiny_bart.get_encoder().register_forward_hook(
        lambda module, inputs, output: encoder_batches.append(output.last_hidden_state.shape[0]))
    try:
        with torch.no_grad():
            tiny_bart.generate(**batch, num_beams=4, max_new_tokens=5)
    finally:
        hook.remove()
    assert encoder_batches == [batch["input_ids"].shape[0]]


def test_transformers_samples_from_the_50_best_tokens_when_top_k_is_unset(tiny_bart, batch):
    """What CTranslate2's sampling is given for an unset top_k (textbox.decoding.ctranslate2_settings)."""
    outputs = {}
    for top_k in (None, 50, 0):
        torch.manual_seed(0)
        with torch.no_grad():
            outputs[top_k] = tiny_bart.generate(**batch, do_sample=True, temperature=5.0, max_new_tokens=8,
                                                **({} if top_k is None else {"top_k": top_k}))
    assert torch.equal(outputs[None], outputs[50]) and not torch.equal(outputs[None], outputs[0])
