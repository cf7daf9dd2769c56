"""RNN encoder-decoders (textbox/model/rnn.py): incremental decoding equals full recomputation, beam search,
batching with padding, save/load through the Auto classes, and the builder's settings."""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoModelForSeq2SeqLM

from tests.conftest import PROJECT_ROOT
from tests.helpers import fresh_python
from textbox.config import TextBoxUserError
from textbox.model.loading import count_parameters
from textbox.model.rnn import build
from textbox.model.rnn_config import ATTENTIONS, CELLS, RNNSeq2SeqConfig
from textbox.model.rnn_model import RNNSeq2SeqModel, register_auto_classes

VOCAB = 40
CASES = list(itertools.product(CELLS, ATTENTIONS))


def tiny(cell: str, attention: str = "luong", **changes) -> RNNSeq2SeqModel:
    torch.manual_seed(0)
    settings = {"vocab_size": VOCAB, "cell": cell, "embedding_size": 12, "hidden_size": 16, "num_layers": 2,
                "dropout": 0.0, "attention": attention, **changes}
    model = RNNSeq2SeqModel(RNNSeq2SeqConfig(**settings)).eval()
    with torch.no_grad():  # a non-zero output bias, so that a reload that dropped it would show
        model.output_bias.uniform_(-0.5, 0.5)
    model.generation_config.max_new_tokens = 7
    return model


def padded_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Three right-padded sources of lengths 7, 5 and 2 (pad id 1)."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, VOCAB, (3, 7), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    mask[2, 2:] = 0
    return ids.masked_fill(mask == 0, 1), mask


def generate(model: RNNSeq2SeqModel, ids: torch.Tensor, mask: torch.Tensor, **settings) -> torch.Tensor:
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                              min_new_tokens=model.generation_config.max_new_tokens, **settings)


@pytest.mark.parametrize("cell,attention", CASES)
def test_step_by_step_state_gives_the_teacher_forced_logits(cell, attention):
    model = tiny(cell, attention)
    ids, mask = padded_batch()
    targets = torch.randint(5, VOCAB, (3, 6), generator=torch.Generator().manual_seed(2))
    decoder_ids = model.prepare_decoder_input_ids_from_labels(labels=targets)
    with torch.no_grad():
        whole = model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder_ids, use_cache=False).logits
        encoded = model.get_encoder()(ids, attention_mask=mask)
        state, steps = None, []
        for t in range(decoder_ids.shape[1]):
            out = model(attention_mask=mask, encoder_outputs=encoded, decoder_input_ids=decoder_ids[:, t:t + 1],
                        past_key_values=state, use_cache=True)
            state = out.past_key_values
            steps.append(out.logits)
    assert state.get_seq_length() == decoder_ids.shape[1]
    torch.testing.assert_close(torch.cat(steps, dim=1), whole, rtol=1e-5, atol=1e-5)


def test_prepare_decoder_inputs_shifts_labels_behind_the_start_token():
    model = tiny("gru")
    labels = torch.tensor([[7, 8, 2, -100], [9, 2, -100, -100]])
    expected = torch.tensor([[2, 7, 8, 2], [2, 9, 2, 1]])  # start = eos (2), -100 -> pad (1)
    assert torch.equal(model.prepare_decoder_input_ids_from_labels(labels=labels), expected)


@pytest.mark.parametrize("cell,attention", CASES)
def test_greedy_generation_is_the_argmax_of_the_full_forward(cell, attention):
    model = tiny(cell, attention)
    ids, mask = padded_batch()
    generated = generate(model, ids, mask, num_beams=1)
    sequence = torch.full((3, 1), model.config.decoder_start_token_id)
    with torch.no_grad():
        for _ in range(model.generation_config.max_new_tokens):
            logits = model(input_ids=ids, attention_mask=mask, decoder_input_ids=sequence, use_cache=False).logits
            logits[:, -1, model.config.eos_token_id] = -float("inf")  # min_new_tokens bans eos
            sequence = torch.cat([sequence, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(generated, sequence)
    assert torch.equal(generate(model, ids, mask, num_beams=1, use_cache=False), generated)


@pytest.mark.parametrize("cell,attention", CASES)
def test_beam_search_reorders_the_state(cell, attention):
    """With the state (reordered by beam search) and without it (each step recomputes the whole prefix):
    identical beams; and a beam of 1 is greedy search."""
    model = tiny(cell, attention)
    ids, mask = padded_batch()
    cached = generate(model, ids, mask, num_beams=4)
    assert torch.equal(cached, generate(model, ids, mask, num_beams=4, use_cache=False))
    assert torch.equal(generate(model, ids, mask, num_beams=1),
                       generate(model, ids, mask, num_beams=1, num_return_sequences=1, length_penalty=0.0))


@pytest.mark.parametrize("cell,attention", CASES)
@pytest.mark.parametrize("beams", [1, 3])
def test_batched_generation_equals_one_example_at_a_time(cell, attention, beams):
    model = tiny(cell, attention)
    ids, mask = padded_batch()
    together = generate(model, ids, mask, num_beams=beams)
    for row in range(3):
        length = int(mask[row].sum())
        alone = generate(model, ids[row:row + 1, :length], mask[row:row + 1, :length], num_beams=beams)
        assert torch.equal(alone[0], together[row]), (row, alone, together[row])


def test_padding_is_invisible_to_the_model():
    """Extra padding (and whatever token ids sit under it) changes nothing."""
    model = tiny("lstm", "bahdanau")
    ids, mask = padded_batch()
    wider_ids = torch.cat([ids, torch.full((3, 4), 33)], dim=1)
    wider_mask = torch.cat([mask, torch.zeros(3, 4, dtype=torch.long)], dim=1)
    wider_ids[1, 5:] = 17
    decoder_ids = torch.tensor([[2, 5, 6], [2, 7, 8], [2, 9, 10]])
    with torch.no_grad():
        narrow = model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder_ids).logits
        wide = model(input_ids=wider_ids, attention_mask=wider_mask, decoder_input_ids=decoder_ids).logits
    torch.testing.assert_close(narrow, wide, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cell", CELLS)
def test_encoder_equals_a_packed_bidirectional_torch_rnn(cell):
    """The per-layer, per-direction runs over the padded batch give what a packed multi-layer bidirectional torch
    RNN with the same weights gives: states at every real position and final states (h)."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    model = tiny(cell, "luong")
    encoder = model.encoder
    reference = {"rnn": torch.nn.RNN, "gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[cell](
        12, 16, num_layers=2, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for layer in range(2):
            for direction, suffix in ((0, ""), (1, "_reverse")):
                single = encoder.layers[2 * layer + direction]
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    getattr(reference, f"{name}_l{layer}{suffix}").copy_(getattr(single, f"{name}_l0"))
    ids, mask = padded_batch()
    lengths = mask.sum(1)
    with torch.no_grad():
        ours = encoder(ids, attention_mask=mask)
        packed = pack_padded_sequence(encoder.embed_tokens(ids), lengths, batch_first=True, enforce_sorted=False)
        outputs, final = reference(packed)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=ids.shape[1])
        final = final[0] if cell == "lstm" else final  # h: [layers x directions, B, H]
        joined = final.view(2, 2, 3, 16).permute(2, 0, 1, 3).reshape(3, 2, 32)
    valid = mask.bool()
    torch.testing.assert_close(ours.last_hidden_state[valid], encoder.memory(outputs)[valid], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ours.decoder_init[:, :2], torch.tanh(encoder.bridge(joined)), rtol=1e-5, atol=1e-5)


def test_left_padding_is_refused():
    model = tiny("gru")
    ids, mask = padded_batch()
    with pytest.raises(ValueError, match="right-padded"):
        model(input_ids=ids, attention_mask=mask.flip(1), decoder_input_ids=ids[:, :2])


def test_no_repeat_ngram_size_is_honoured():
    model = tiny("gru", "none", num_layers=1)
    with torch.no_grad():  # a model that would say token 9 forever
        model.output_bias.zero_()
        model.output_bias[9] = 50.0
    ids, mask = padded_batch()
    free = generate(model, ids, mask, num_beams=1)
    assert (free[:, 1:] == 9).all()
    for beams in (1, 3):
        blocked = generate(model, ids, mask, num_beams=beams, no_repeat_ngram_size=2)
        for row in blocked.tolist():
            bigrams = list(zip(row, row[1:]))
            assert len(bigrams) == len(set(bigrams)), row


def test_save_and_reload_through_the_auto_classes(tmp_path: Path):
    model = tiny("lstm", "bahdanau", bidirectional=True, tie_embeddings=False)
    ids, mask = padded_batch()
    model.save_pretrained(tmp_path)
    register_auto_classes()  # explicit (build_model and the builder make this call), and idempotent
    register_auto_classes()
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert type(reloaded) is RNNSeq2SeqModel and reloaded.config.cell == "lstm"
    assert reloaded.config.attention == "bahdanau" and reloaded.config.tie_embeddings is False
    original, again = model.state_dict(), reloaded.state_dict()
    assert original.keys() == again.keys()
    assert all(torch.equal(original[key], again[key]) for key in original)
    assert reloaded.generation_config.max_new_tokens == 7
    assert torch.equal(generate(model, ids, mask, num_beams=2), generate(reloaded, ids, mask, num_beams=2))


def test_tied_output_layer_is_the_embedding_matrix():
    model = tiny("gru", embedding_size=12, hidden_size=16)
    names = [name for name, _ in model.named_parameters()]
    assert "lm_head.weight" not in names and "output_projection.weight" in names
    same = tiny("gru", embedding_size=16, hidden_size=16)
    assert same.output_projection is None and same.lm_head is None


def test_training_steps_lower_the_loss():
    model = tiny("gru", "luong", embedding_size=64, hidden_size=64).train()
    ids, mask = padded_batch()
    labels = ids.masked_fill(mask == 0, -100)  # copy the source
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(30):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]


# --- the builder ------------------------------------------------------------------------------------------------
TINY_SIZES = {"embedding_size": 16, "hidden_size": 16, "num_layers": 1}


@pytest.mark.parametrize("cell", CELLS)
def test_build_uses_the_transformer_tokenizer_and_the_model_name_as_cell(cell, tiny_config, train_split):
    from textbox.model import transformer

    config = tiny_config(model=cell, config_kwargs=TINY_SIZES)
    built = build(config, train_split)
    model, tokenizer = built.model, built.tokenizer
    assert model.config.cell == cell and model.config.vocab_size == len(tokenizer)
    assert tokenizer.mask_token == "<mask>" and tokenizer.pad_token_id == model.config.pad_token_id == 1
    assert model.generation_config.decoder_start_token_id == tokenizer.eos_token_id
    assert model.generation_config.max_new_tokens == config.tgt_len
    bart_tokenizer = transformer.build(tiny_config(), train_split).tokenizer  # the same cached tokenizer
    assert bart_tokenizer.get_vocab() == tokenizer.get_vocab()


def test_build_reloads_a_checkpoint_and_checks_its_cell(tmp_path, tiny_config, train_split):
    built = build(tiny_config(model="gru", config_kwargs=TINY_SIZES), train_split)
    model, tokenizer = built.model, built.tokenizer
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    built = build(tiny_config(model="gru", model_path=str(tmp_path)), None)
    again, again_tokenizer = built.model, built.tokenizer
    assert type(again) is RNNSeq2SeqModel and again_tokenizer.get_vocab() == tokenizer.get_vocab()
    with pytest.raises(TextBoxUserError, match="is a gru model, not lstm: use --model=gru"):
        build(tiny_config(model="lstm", model_path=str(tmp_path)), None)
    with pytest.raises(TextBoxUserError, match="starts untrained"):
        build(tiny_config(model="gru"), None)


def test_unknown_or_bad_settings_are_user_errors(tiny_config, train_split):
    with pytest.raises(TextBoxUserError, match="hiden_size, layers are not settings of the gru model"):
        build(tiny_config(model="gru", config_kwargs={"hiden_size": 8, "layers": 2}), train_split)
    with pytest.raises(TextBoxUserError, match="'cell' is chosen by the model name"):
        build(tiny_config(model="gru", config_kwargs={"cell": "lstm"}), train_split)
    with pytest.raises(TextBoxUserError, match="attention must be one of luong, bahdanau, none"):
        build(tiny_config(model="rnn", config_kwargs={"attention": "dot"}), train_split)


def yaml_defaults(cell: str) -> dict:
    return yaml.safe_load((PROJECT_ROOT / "configs" / "model" / f"{cell}.yaml").read_text())


@pytest.mark.parametrize("cell", CELLS)
def test_yaml_defaults_build_a_model(cell):
    """The shipped defaults are valid settings; with the default 8k vocabulary the sizes are as documented."""
    defaults = yaml_defaults(cell)
    assert set(defaults["config_kwargs"]) <= {"embedding_size", "hidden_size", "num_layers", "bidirectional",
                                              "dropout", "attention", "tie_embeddings"}
    model = RNNSeq2SeqModel(RNNSeq2SeqConfig(vocab_size=defaults["tokenizer_kwargs"]["vocab_size"], cell=cell,
                                             **defaults["config_kwargs"]))
    trainable, total = count_parameters(model)
    expected = {"rnn": 3_436_096, "gru": 5_277_248, "lstm": 6_329_152}[cell]
    assert trainable == total == expected


IMPORT_CHECK = """
from transformers import AutoConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
import textbox.model.rnn, textbox.model.rnn_model, textbox.model.build
assert "textbox_rnn" not in CONFIG_MAPPING, "importing the RNN modules registered the model type"
textbox.model.rnn_model.register_auto_classes()
textbox.model.rnn_model.register_auto_classes()
assert type(AutoConfig.for_model("textbox_rnn")).__name__ == "RNNSeq2SeqConfig"
print("ok")
"""


@pytest.mark.slow  # a fresh interpreter importing torch and transformers: ~10 s
def test_importing_the_rnn_modules_registers_nothing_until_asked(tmp_path: Path):
    """No import-time side effect on transformers: the Auto classes learn textbox_rnn from register_auto_classes."""
    done = fresh_python(IMPORT_CHECK, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
