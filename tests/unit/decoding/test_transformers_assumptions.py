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
