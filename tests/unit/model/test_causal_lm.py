"""Decoder-only LMs: the builder, the loss (against Hugging Face's own causal-LM loss) and left-padded generation
(against unbatched generation), for a tiny GPT-2 and a tiny Llama."""
from __future__ import annotations

import pytest
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, GPT2LMHeadModel, LlamaForCausalLM

from textbox.config import Config, TextBoxUserError
from textbox.data.batching import EvalExamples, LengthSortedBatchSampler, column_lengths
from textbox.data.collate import CausalLMCollator
from textbox.data.tokenize import encode_lm_targets, encode_within
from textbox.decoding.generate import generate_texts
from textbox.model import causal_lm
from textbox.model.build import build_model
from textbox.model.loss import forward_token_losses, target_tokens

from tests.causal_helpers import POSITIONS, save_tiny_causal_lm

STYLES = {"gpt2": GPT2LMHeadModel, "llama": LlamaForCausalLM}


@pytest.fixture(scope="module", params=sorted(STYLES))
def saved(request, tmp_path_factory, corpus):
    """(style, directory) of a tiny pretrained-like checkpoint: config, weights, a tokenizer without pad."""
    cache = tmp_path_factory.mktemp("cache")
    return request.param, save_tiny_causal_lm(tmp_path_factory.mktemp(request.param), corpus, request.param, cache)


def lm_config(tiny_config, path, **changes):
    values = {"model": "causal_lm", "model_path": str(path), "config_kwargs": {}, "tokenizer_kwargs": {},
              "src_len": 24, "tgt_len": 12}
    return tiny_config(**{**values, **changes})


def examples(tokenizer, split, count, src_len=24, tgt_len=12):
    sources = encode_within(tokenizer, split.sources[:count], src_len, "tail", "src_len")
    targets = encode_lm_targets(tokenizer, [refs[0] for refs in split.targets[:count]], tgt_len)
    return [{"input_ids": s, "labels": t} for s, t in zip(sources, targets)]


# --- the builder -----------------------------------------------------------------------------------------------
def test_loads_pretrained_weights_and_pads_with_eos(saved, tiny_config):
    style, path = saved
    built = causal_lm.build(lm_config(tiny_config, path), None)
    model, tokenizer = built.model, built.tokenizer
    original = AutoModelForCausalLM.from_pretrained(path)
    assert isinstance(model, STYLES[style])
    assert torch.equal(model.get_input_embeddings().weight, original.get_input_embeddings().weight)
    assert tokenizer.pad_token_id == tokenizer.eos_token_id == 2  # the tokenizer had no pad token
    assert model.config.pad_token_id == model.generation_config.pad_token_id == 2
    assert model.generation_config.eos_token_id == 2
    assert model.generation_config.max_new_tokens == 12


def test_from_scratch_keeps_the_architecture_with_config_kwargs_applied(saved, tiny_config):
    style, path = saved
    dropout = {"gpt2": "resid_pdrop", "llama": "attention_dropout"}[style]
    model = causal_lm.build(lm_config(tiny_config, path, from_scratch=True, config_kwargs={dropout: 0.25}), None).model
    original = AutoModelForCausalLM.from_pretrained(path)
    assert isinstance(model, STYLES[style]) and getattr(model.config, dropout) == 0.25
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in original.parameters())
    assert not torch.equal(model.get_input_embeddings().weight, original.get_input_embeddings().weight)


def test_a_misspelled_config_kwarg_is_an_error(saved, tiny_config):
    with pytest.raises(TextBoxUserError, match="not a setting"):
        causal_lm.build(lm_config(tiny_config, saved[1], config_kwargs={"n_layerz": 1}), None)


def test_an_encoder_decoder_path_is_refused_clearly(saved_bart, tiny_config):
    with pytest.raises(TextBoxUserError, match="'bart' encoder-decoder, not a decoder-only LM.*--model=bart"):
        causal_lm.build(lm_config(tiny_config, saved_bart), None)


def test_source_plus_target_are_fitted_to_the_positions_or_refused_when_typed(saved, tiny_config):
    """One sequence holds source, separator and target: lengths from a default or a yaml are fitted to it when the
    model is built (textbox.model.lengths), generation length included; typed ones that cannot fit are refused."""
    built = build_model(lm_config(tiny_config, saved[1], src_len=256, tgt_len=64), None)  # the schema's defaults
    fitted = built.fitting.config
    assert fitted.src_len + 1 + fitted.tgt_len == POSITIONS and fitted.tgt_len == 64 * (POSITIONS - 1) // 320
    assert built.model.generation_config.max_new_tokens == fitted.tgt_len

    def typed(**values):
        config = lm_config(tiny_config, saved[1], **values)
        return Config(config.to_dict(), {key: "command line" for key in values})

    assert build_model(typed(src_len=24, tgt_len=39), None).fitting.changed == {}  # 24 + 1 + 39 = 64: fits
    assert build_model(typed(tgt_len=40), None).fitting.changed == {"src_len": (24, 23)}  # around the typed one
    with pytest.raises(TextBoxUserError, match=f"24 \\+ 1 \\+ 40 tokens \\(--src_len, --tgt_len\\) exceed the "
                                               f"{POSITIONS} positions"):
        build_model(typed(src_len=24, tgt_len=40), None)
    with pytest.raises(TextBoxUserError, match="max_position_embeddings"):
        build_model(typed(src_len=24, generation_kwargs={"max_new_tokens": 40}, from_scratch=True), None)


# --- the loss --------------------------------------------------------------------------------------------------
def test_the_loss_is_hugging_faces_causal_lm_loss_on_the_target_tokens(saved, tiny_config, train_split):
    """Reference: the model's own loss (labels = the joined sequence with -100 outside the target), one example
    at a time without padding; ours comes from a padded batch and must give the same sums and counts."""
    _, path = saved
    built = causal_lm.build(lm_config(tiny_config, path), None)
    model, tokenizer = built.model, built.tokenizer
    model.eval()
    data = examples(tokenizer, train_split, 6)
    batch = CausalLMCollator(tokenizer)(data)
    assert len({len(e["input_ids"]) + len(e["labels"]) for e in data}) > 1  # padding is really exercised
    with torch.no_grad():
        sums, counts = forward_token_losses(model, model, batch)
        for row, example in enumerate(data):
            prompt = example["input_ids"] + [tokenizer.eos_token_id]  # the separator
            ids = torch.tensor([prompt + example["labels"]])
            labels = torch.tensor([[-100] * len(prompt) + example["labels"]])
            reference = model(input_ids=ids, labels=labels).loss
            assert counts[row].item() == len(example["labels"])
            assert sums[row].item() / counts[row].item() == pytest.approx(reference.item(), rel=1e-5)
    assert target_tokens(batch) == sum(len(e["labels"]) for e in data) == int(counts.sum())


def test_label_smoothing_and_gradients_reach_the_model(saved, tiny_config, train_split):
    _, path = saved
    built = causal_lm.build(lm_config(tiny_config, path), None)
    model, tokenizer = built.model, built.tokenizer
    batch = CausalLMCollator(tokenizer)(examples(tokenizer, train_split, 3))
    plain, _ = forward_token_losses(model, model, batch)
    smoothed, _ = forward_token_losses(model, model, batch, label_smoothing=0.1)
    assert not torch.allclose(plain, smoothed)
    smoothed.sum().backward()
    assert model.get_input_embeddings().weight.grad.abs().sum() > 0


# --- generation ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("num_beams", [1, 2])
def test_left_padded_batched_generation_equals_unbatched_generation(saved, tiny_config, train_split, num_beams):
    """Through generate_texts, as evaluation runs it: length-sorted batches of 5 (prompts of different lengths,
    so left padding) give the same texts as batches of one example, and only the new tokens."""
    _, path = saved
    built = causal_lm.build(lm_config(tiny_config, path), None)
    model, tokenizer = built.model, built.tokenizer
    data = examples(tokenizer, train_split, 10)
    settings = {"max_new_tokens": 6, "min_new_tokens": 6, "do_sample": False, "num_beams": num_beams}
    accelerator = Accelerator(cpu=True)

    def texts(batch_size):
        sampler = LengthSortedBatchSampler(column_lengths(data, "input_ids"), column_lengths(data, "labels"),
                                           batch_size)
        loader = DataLoader(EvalExamples(data), batch_sampler=sampler, collate_fn=CausalLMCollator(tokenizer))
        return generate_texts(accelerator, model, tokenizer, loader, settings, "test")

    batched, single = texts(5), texts(1)
    assert batched == single
    assert len(set(map(len, (e["input_ids"] for e in data[:5])))) > 1
    # Only the new tokens: what generate gives for the first prompt (source + separating eos) alone, minus it.
    prompt = torch.tensor([data[0]["input_ids"] + [tokenizer.eos_token_id]])
    with torch.no_grad():
        alone = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), **settings)
    assert single[0] == " ".join(tokenizer.decode(alone[0, prompt.shape[1]:], skip_special_tokens=True).split())
