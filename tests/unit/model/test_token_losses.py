"""The encoder-decoder token loss projects only the scored decoder positions onto the vocabulary (padding costs
no output-layer work), with the losses and gradients of projecting every position."""
from __future__ import annotations

import contextlib

import pytest
import torch
from transformers import BartForConditionalGeneration, T5Config, T5ForConditionalGeneration

import textbox.model.loss as loss
from tests.helpers import tiny_bart_config


def _bart() -> torch.nn.Module:
    torch.manual_seed(0)
    return BartForConditionalGeneration(tiny_bart_config(
        vocab_size=50, d_model=16, encoder_layers=1, decoder_layers=1, encoder_ffn_dim=32, decoder_ffn_dim=32,
        max_position_embeddings=32, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
        dropout=0.0))


def _t5() -> torch.nn.Module:
    torch.manual_seed(0)
    return T5ForConditionalGeneration(T5Config(vocab_size=50, d_model=16, d_kv=8, d_ff=32, num_layers=1,
                                               num_heads=2, pad_token_id=0, eos_token_id=1,
                                               decoder_start_token_id=0, dropout_rate=0.0))


def _batch() -> dict[str, torch.Tensor]:
    labels = torch.tensor([[5, 6, 7, 8, 2], [9, 2, -100, -100, -100], [10, 11, 2, -100, -100]])
    input_ids = torch.tensor([[3, 4, 5, 2], [6, 2, 1, 1], [7, 8, 9, 2]])
    return {"input_ids": input_ids, "attention_mask": (input_ids != 1).long(), "labels": labels}


def _every_position(*args: object) -> contextlib.AbstractContextManager[loss.Packing]:
    return contextlib.nullcontext(loss.Packing())


@pytest.mark.parametrize("build", [_bart, _t5])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_the_output_layer_projects_only_scored_positions_with_the_same_losses_and_gradients(build, smoothing,
                                                                                              monkeypatch):
    model, batch = build(), _batch()
    rows = []
    model.get_output_embeddings().register_forward_hook(lambda module, args, out: rows.append(out.shape[:-1]))
    sums, counts = loss.forward_token_losses(model, model, batch, smoothing)
    sums.sum().backward()
    packed_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    assert rows == [torch.Size([1, 10])]  # the 10 scored positions of 3 x 5, not 15
    assert counts.tolist() == [5, 2, 3]

    monkeypatch.setattr(loss, "scored_rows_only", _every_position)
    full_sums, _ = loss.forward_token_losses(model, model, batch, smoothing)
    full_sums.sum().backward()
    assert rows[-1] == torch.Size([3, 5])
    torch.testing.assert_close(sums, full_sums)
    for packed, full in zip(packed_grads, (p.grad for p in model.parameters())):
        torch.testing.assert_close(packed, full)


def test_a_batch_without_padding_and_a_compiled_forward_project_every_position():
    model = _bart()
    scored = torch.ones(2, 3, dtype=torch.bool)
    with loss.scored_rows_only(model, model, scored) as packing:
        assert not packing.packed
    compiled_like = torch.nn.Module()
    compiled_like._orig_mod = model  # what torch.compile's wrapper holds
    with loss.scored_rows_only(compiled_like, model, scored.logical_not()) as packing:
        assert not packing.packed


def _gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2, n_positions=32,
                                      bos_token_id=2, eos_token_id=2, resid_pdrop=0.0, embd_pdrop=0.0,
                                      attn_pdrop=0.0))


def _prompt_tuned_gpt2() -> torch.nn.Module:
    from peft import PromptTuningConfig, get_peft_model

    return get_peft_model(_gpt2(), PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=3))


def _causal_batch() -> dict[str, torch.Tensor]:
    """Left-padded source + separator + target, the target scored (textbox.data.collate's layout)."""
    input_ids = torch.tensor([[5, 6, 7, 2, 8, 9, 2], [0, 0, 5, 2, 10, 2, 0], [0, 6, 7, 2, 11, 2, 0]])
    labels = torch.full_like(input_ids, -100)
    labels[0, 4:] = input_ids[0, 4:]
    labels[1, 4:6] = input_ids[1, 4:6]
    labels[2, 4:6] = input_ids[2, 4:6]
    return {"input_ids": input_ids, "attention_mask": (input_ids != 0).long(), "labels": labels}


@pytest.mark.parametrize("build", [_gpt2, _prompt_tuned_gpt2])
def test_a_decoder_only_model_projects_only_the_positions_before_a_target_token(build, monkeypatch):
    model, batch = build(), _causal_batch()
    rows = []
    model.get_output_embeddings().register_forward_hook(lambda module, args, out: rows.append(out.shape[:-1]))
    sums, counts = loss.forward_token_losses(model, model, batch, 0.1)
    sums.sum().backward()
    packed_grads = [p.grad.clone() for p in model.parameters() if p.requires_grad]
    model.zero_grad()
    assert rows == [torch.Size([1, 7])] and counts.tolist() == [3, 2, 2]

    monkeypatch.setattr(loss, "scored_rows_only", _every_position)
    full_sums, _ = loss.forward_token_losses(model, model, batch, 0.1)
    full_sums.sum().backward()
    assert rows[-1][0] == 3 and rows[-1][1] >= 7  # every position of every row (virtual tokens too)
    torch.testing.assert_close(sums, full_sums)
    for packed, full in zip(packed_grads, (p.grad for p in model.parameters() if p.requires_grad)):
        torch.testing.assert_close(packed, full)


def test_an_output_layer_called_with_another_shape_keeps_the_models_own_logits(monkeypatch):
    """ProphetNet projects its n-gram streams [batch, streams, positions, d] in one call: the hook leaves that call
    alone (it raised before) and the loss is the one of every position."""
    from transformers import ProphetNetConfig, ProphetNetForConditionalGeneration

    torch.manual_seed(0)
    model = ProphetNetForConditionalGeneration(ProphetNetConfig(
        vocab_size=50, hidden_size=16, encoder_ffn_dim=16, decoder_ffn_dim=16, num_encoder_layers=1,
        num_decoder_layers=1, num_encoder_attention_heads=2, num_decoder_attention_heads=2, ngram=2, pad_token_id=0,
        decoder_start_token_id=2, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0))
    batch = _batch()
    sums, counts = loss.forward_token_losses(model, model, batch, 0.1)
    monkeypatch.setattr(loss, "scored_rows_only", _every_position)
    full_sums, _ = loss.forward_token_losses(model, model, batch, 0.1)
    torch.testing.assert_close(sums, full_sums)
    assert counts.tolist() == [5, 2, 3]


def _seq2seq_types() -> list[str]:
    """The model types of every encoder-decoder family's tiny checkpoint (tests/family_helpers.py)."""
    from tests.family_helpers import CHECKPOINTS

    return sorted({entry.model_type for entry in CHECKPOINTS.values() if entry.start is not None})


@pytest.mark.parametrize("model_type", _seq2seq_types())
def test_decoder_inputs_are_what_the_models_own_forward_builds_from_labels(model_type):
    """Every encoder-decoder class, with its own special token ids: those with prepare_decoder_input_ids_from_labels
    (mBART and PLBART rotate the end token to the front) and those that shift labels only inside their forward
    (M2M100, Blenderbot, Blenderbot-Small)."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    from tests.family_helpers import CHECKPOINTS

    settings = next(entry.settings for entry in CHECKPOINTS.values() if entry.model_type == model_type)
    config = AutoConfig.for_model(model_type, **settings)
    ids = {name: value for name, value in config.to_dict().items() if name.endswith("_token_id") and value is not None}
    config.vocab_size = max(50, *(value + 1 for value in ids.values()))  # Marian pads with its last id, 58100
    if "decoder_start_token_id" not in ids:  # T5 configs leave it to the checkpoint (which gives the pad id)
        config.decoder_start_token_id = config.pad_token_id
    torch.manual_seed(0)
    model = AutoModelForSeq2SeqLM.from_config(config).eval()
    labels = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12], [9, 13, 14, -100, -100, -100, -100, -100]])
    input_ids = torch.tensor([[3, 4, 5, 6, 7, 8, 9, 10], [6, 7, 8, 9, 10, 11, 12, 13]])
    with torch.no_grad():
        own = model(input_ids=input_ids, labels=labels).logits
        ours = model(input_ids=input_ids, decoder_input_ids=loss.decoder_inputs(model, labels)).logits
    torch.testing.assert_close(ours, own, rtol=0, atol=0)
