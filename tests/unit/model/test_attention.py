"""--attn_implementation: auto runs eager attention for bf16 on a CPU (torch's CPU SDPA kernels are slow there)
and transformers' default otherwise; an explicit choice is honoured, refused for the RNNs; both implementations
compute the same logits."""
from __future__ import annotations

import pytest
import torch

from tests.helpers import one_problem
from textbox.model.build import build_model


def implementation(built) -> str:
    return built.model.config._attn_implementation


@pytest.mark.parametrize("precision,asked,expected", [
    ("no", "auto", "sdpa"), ("bf16", "auto", "eager"), ("bf16", "sdpa", "sdpa"), ("no", "eager", "eager")])
def test_the_chosen_implementation_is_the_models(tiny_config, train_split, precision, asked, expected):
    built = build_model(tiny_config(mixed_precision=precision, attn_implementation=asked), train_split)
    assert implementation(built) == expected


def test_the_launchers_bf16_counts_for_auto(tiny_config, train_split, monkeypatch):
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    assert implementation(build_model(tiny_config(), train_split)) == "eager"


def test_both_implementations_compute_the_same_logits(saved_bart, tiny_config):
    logits = []
    for asked in ("eager", "sdpa"):
        model = build_model(tiny_config(model_path=str(saved_bart), attn_implementation=asked), None).model.eval()
        ids = torch.tensor([[5, 9, 14, 2, 1, 1], [7, 8, 9, 10, 11, 2]])
        with torch.no_grad():
            logits.append(model(input_ids=ids, attention_mask=(ids != 1).long(), labels=ids[:, :4].contiguous()).logits)
    assert torch.allclose(logits[0], logits[1], atol=1e-5)


def test_an_explicit_choice_is_refused_for_the_rnns():
    problem = one_problem("--model=gru", "--attn_implementation=eager")
    assert problem.startswith("--attn_implementation chooses between transformers' attention implementations; an "
                              "RNN computes its own")
