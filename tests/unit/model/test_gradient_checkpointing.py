"""--gradient_checkpointing: the same loss and gradients as without it (dropout on), and the layers really
recomputed in the backward pass in training mode and not in eval mode, for every family (BART, T5, GPT-2, Llama, an
EncoderDecoderModel pair, the RNNs); the build switches it on from the key; a model class without it is refused by
name."""
from __future__ import annotations

import copy

import pytest
import torch
from transformers import (BartForConditionalGeneration, BertConfig, EncoderDecoderConfig, EncoderDecoderModel,
                          GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, OpenAIGPTConfig,
                          OpenAIGPTLMHeadModel, T5Config, T5ForConditionalGeneration)

from tests.helpers import tiny_bart_config
from textbox.config import TextBoxUserError
from textbox.model.build import build_model
from textbox.model.loss import forward_token_losses
from textbox.model.gradient_checkpointing import enable_gradient_checkpointing
from textbox.model.rnn_config import RNNSeq2SeqConfig
from textbox.model.rnn_model import RNNSeq2SeqModel

VOCAB, IDS = 60, {"pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2}


def bart() -> torch.nn.Module:
    return BartForConditionalGeneration(tiny_bart_config(
        vocab_size=VOCAB, d_model=16, encoder_ffn_dim=32, decoder_ffn_dim=32, dropout=0.2, attention_dropout=0.1,
        max_position_embeddings=32, **IDS))


def t5() -> torch.nn.Module:
    return T5ForConditionalGeneration(T5Config(vocab_size=VOCAB, d_model=16, d_kv=8, d_ff=32, num_layers=2,
                                               num_heads=2, dropout_rate=0.2, **IDS))


def gpt2() -> torch.nn.Module:
    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=16, n_layer=2, n_head=2,
                                      resid_pdrop=0.2, embd_pdrop=0.2, attn_pdrop=0.1, bos_token_id=0,
                                      eos_token_id=2))


def llama() -> torch.nn.Module:
    return LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
                                        attention_dropout=0.2, bos_token_id=0, eos_token_id=2))


def bert2bert() -> torch.nn.Module:
    sizes = {"vocab_size": VOCAB, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
             "intermediate_size": 32, "hidden_dropout_prob": 0.2, "max_position_embeddings": 32, "pad_token_id": 1}
    model = EncoderDecoderModel(EncoderDecoderConfig.from_encoder_decoder_configs(
        BertConfig(**sizes), BertConfig(**sizes, is_decoder=True, add_cross_attention=True)))
    model.config.decoder_start_token_id, model.config.pad_token_id = 2, 1
    return model


def rnn(cell: str, attention: str) -> torch.nn.Module:
    return RNNSeq2SeqModel(RNNSeq2SeqConfig(vocab_size=VOCAB, cell=cell, embedding_size=12, hidden_size=16,
                                            num_layers=2, dropout=0.3, attention=attention, **IDS))


MODELS = {"bart": bart, "t5": t5, "gpt2": gpt2, "llama": llama, "bert2bert": bert2bert,
          "gru-bahdanau": lambda: rnn("gru", "bahdanau"), "lstm-luong": lambda: rnn("lstm", "luong"),
          "rnn-none": lambda: rnn("rnn", "none")}


def batch(decoder_only: bool) -> dict[str, torch.Tensor]:
    """Four right-padded examples (an encoder-decoder batch) or joined source + target rows (decoder-only)."""
    generator = torch.Generator().manual_seed(3)
    ids = torch.randint(5, VOCAB, (4, 9), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 6:], mask[3, 3:] = 0, 0
    labels = torch.randint(5, VOCAB, (4, 7), generator=generator)
    labels[2, 4:] = -100
    if decoder_only:
        joined = torch.cat([ids, labels.clamp(min=1)], dim=1)
        return {"input_ids": joined, "attention_mask": torch.ones_like(joined),
                "labels": torch.cat([torch.full_like(ids, -100), labels], dim=1)}
    return {"input_ids": ids.masked_fill(mask == 0, 1), "attention_mask": mask, "labels": labels}


def loss_and_gradients(model: torch.nn.Module, training: bool = True) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model.train(training)
    torch.manual_seed(11)  # the same dropout masks in both models
    sums, counts = forward_token_losses(model, model, batch(not model.config.is_encoder_decoder))
    loss = sums.sum() / counts.sum()
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def recomputed_calls(model: torch.nn.Module, training: bool = True) -> int:
    """Calls of the model's first Linear (GPT-2: Conv1D) or RNN layer in one forward + backward (gradients on), in
    training or eval mode."""
    from transformers.pytorch_utils import Conv1D

    first = next(module for module in model.modules()
                 if isinstance(module, (torch.nn.Linear, Conv1D, torch.nn.RNNBase)))
    calls = []
    handle = first.register_forward_hook(lambda *args: calls.append(1))
    loss_and_gradients(model, training)
    handle.remove()
    model.zero_grad()
    return len(calls)


def checkpointed_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    return [module for module in model.modules() if getattr(module, "gradient_checkpointing", False)]


def acts_in_training_only(plain: torch.nn.Module, checkpointed: torch.nn.Module) -> bool:
    """The claim, measured: in training, one forward + backward runs the first layer twice as often as without
    checkpointing (recomputed in the backward pass); in eval mode, with gradients still on and a backward pass, as
    often as without (nothing recomputed)."""
    return (recomputed_calls(checkpointed, training=True) == 2 * recomputed_calls(plain, training=True)
            and recomputed_calls(checkpointed, training=False) == recomputed_calls(plain, training=False))


@pytest.mark.parametrize("name", MODELS)
def test_same_loss_and_gradients_with_the_layers_recomputed(name):
    torch.manual_seed(0)
    plain = MODELS[name]()
    checkpointed = copy.deepcopy(plain)
    enable_gradient_checkpointing(checkpointed)
    loss, gradients = loss_and_gradients(plain)
    checkpointed_loss, checkpointed_gradients = loss_and_gradients(checkpointed)
    assert torch.allclose(loss, checkpointed_loss, rtol=1e-6, atol=1e-7)
    assert gradients.keys() == checkpointed_gradients.keys() and len(gradients) > 5
    for key, gradient in gradients.items():
        assert torch.allclose(gradient, checkpointed_gradients[key], rtol=1e-5, atol=1e-7), key
    plain.zero_grad(), checkpointed.zero_grad()
    # the first layer runs again in the backward pass (the proof that activations were not kept)
    assert recomputed_calls(checkpointed) == 2 * recomputed_calls(plain)


@pytest.mark.parametrize("name", MODELS)
def test_checkpointing_acts_in_training_only(name):
    torch.manual_seed(0)
    plain = MODELS[name]()
    checkpointed = copy.deepcopy(plain)
    enable_gradient_checkpointing(checkpointed)
    assert checkpointed_layers(checkpointed)
    assert acts_in_training_only(plain, checkpointed)


@pytest.mark.parametrize("name", ["bart", "gru-bahdanau"])
def test_the_training_only_check_fails_on_checkpointing_in_eval_mode(name, monkeypatch):
    """The measurement above can fail: with the checkpointed layers kept in training mode through model.eval()
    (what a checkpointing that ignored the mode would do), the first layer runs again in the eval backward."""
    torch.manual_seed(0)
    plain = MODELS[name]()
    checkpointed = copy.deepcopy(plain)
    enable_gradient_checkpointing(checkpointed)
    layers = checkpointed_layers(checkpointed)
    train = torch.nn.Module.train

    def eval_ignored(module: torch.nn.Module, mode: bool = True) -> torch.nn.Module:
        train(module, mode)
        for layer in layers:
            layer.training = True
        return module

    monkeypatch.setattr(type(checkpointed), "train", eval_ignored)
    assert recomputed_calls(checkpointed, training=False) == 2 * recomputed_calls(plain, training=False)
    assert not acts_in_training_only(plain, checkpointed)


def test_a_model_class_without_it_is_refused_by_name():
    model = OpenAIGPTLMHeadModel(OpenAIGPTConfig(vocab_size=VOCAB, n_positions=16, n_embd=16, n_layer=1, n_head=2))
    with pytest.raises(TextBoxUserError, match=r"--gradient_checkpointing=True: OpenAIGPTLMHeadModel .*drop"):
        enable_gradient_checkpointing(model)


def test_the_key_switches_it_on_in_the_build(tiny_config, train_split):
    for setting in (False, True):
        built = build_model(tiny_config(gradient_checkpointing=setting), train_split)
        layers = built.model.model.encoder.layers
        assert all(layer.gradient_checkpointing is setting for layer in layers)


def test_lora_over_a_checkpointed_model_gets_the_same_adapter_gradients(tiny_config, train_split, tmp_path):
    """Non-reentrant checkpointing gives the adapter its gradients although the frozen embeddings' outputs
    need none (the reentrant form would leave every checkpointed layer without gradients)."""
    base = build_model(tiny_config(), train_split)
    base.model.save_pretrained(tmp_path / "base")
    base.tokenizer.save_pretrained(tmp_path / "base")
    found = []
    for setting in (False, True):
        torch.manual_seed(0)  # the same initial LoRA weights
        built = build_model(tiny_config(model_path=str(tmp_path / "base"), efficient_methods=["lora"],
                                        gradient_checkpointing=setting), None)
        found.append(loss_and_gradients(built.model)[1])
    plain, checkpointed = found
    assert plain.keys() == checkpointed.keys() and all("lora_" in name for name in plain)
    lora_b = [name for name in plain if "lora_B" in name]  # lora_A's gradients are 0 while B starts at 0
    assert lora_b and all(checkpointed[name].abs().sum() > 0 for name in lora_b)
    for name, gradient in plain.items():
        assert torch.allclose(gradient, checkpointed[name], rtol=1e-5, atol=1e-7), name
