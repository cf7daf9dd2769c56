"""Decoder-only batches: source + target joined (loss on the target only), prompts left-padded for generation;
and the target layout of the tokenised splits for decoder-only models."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from textbox.config.errors import ConfigError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.batching import EvalExamples
from textbox.data.collate import CausalLMCollator, Seq2SeqCollator, make_collator
from textbox.data.split import Split
from textbox.data.tokenize import cache_key, encode_lm_targets, tokenize_splits
from textbox.utils.labels import IGNORE_INDEX as X

from tests.unit.data.test_tokenize import word_tokenizer

PAD, BOS, EOS = 9, 7, 8


def tokenizer(pad=PAD, bos=BOS, eos=EOS):
    return SimpleNamespace(pad_token_id=pad, bos_token_id=bos, eos_token_id=eos)


def test_source_separator_and_target_are_joined_with_labels_on_the_target_only():
    batch = CausalLMCollator(tokenizer())([
        {"input_ids": [1, 2, 3], "labels": [4, EOS], "index": 5},
        {"input_ids": [1], "labels": [5, 6, 4, 4, 4, EOS], "index": 2},
    ])
    assert batch["input_ids"].tolist() == [[1, 2, 3, EOS, 4, EOS, PAD, PAD], [1, EOS, 5, 6, 4, 4, 4, EOS]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]
    assert batch["labels"].tolist() == [[X, X, X, X, 4, EOS, X, X], [X, X, 5, 6, 4, 4, 4, EOS]]
    # generation view: source + separator alone, left-padded so that every prompt ends in the last column
    assert batch["prompt_ids"].tolist() == [[1, 2, 3, EOS], [PAD, PAD, 1, EOS]]
    assert batch["prompt_attention_mask"].tolist() == [[1, 1, 1, 1], [0, 0, 1, 1]]
    assert batch["index"].tolist() == [5, 2]
    assert all(tensor.dtype == torch.long for tensor in batch.values())


def test_a_source_that_ends_with_eos_gets_no_second_one_and_an_empty_source_is_the_separator_alone():
    batch = CausalLMCollator(tokenizer())([{"input_ids": [BOS, 1, EOS], "labels": [3, EOS]},
                                           {"input_ids": [], "labels": [3, EOS]}])
    assert batch["input_ids"].tolist() == [[BOS, 1, EOS, 3, EOS], [EOS, 3, EOS, PAD, PAD]]
    assert batch["labels"].tolist() == [[X, X, X, 3, EOS], [X, 3, EOS, X, X]]
    assert batch["labels"][:, 0].eq(X).all()  # target_tokens relies on it: the shift drops no target token


def test_padding_is_found_from_lengths_even_when_pad_is_eos():
    batch = CausalLMCollator(tokenizer(pad=EOS))([{"input_ids": [1, 2], "labels": [EOS]},
                                                  {"input_ids": [1, 2], "labels": [3, 3, EOS]}])
    assert batch["input_ids"].tolist() == [[1, 2, EOS, EOS, EOS, EOS], [1, 2, EOS, 3, 3, EOS]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]]
    assert batch["labels"].tolist() == [[X, X, X, EOS, X, X], [X, X, X, 3, 3, EOS]]
    assert "index" not in batch


def test_a_tokenizer_without_pad_pads_with_eos():
    batch = CausalLMCollator(tokenizer(pad=None, bos=None))([{"input_ids": [1], "labels": [3, EOS]},
                                                            {"input_ids": [1, 2], "labels": [EOS]}])
    assert batch["input_ids"].tolist() == [[1, EOS, 3, EOS], [1, 2, EOS, EOS]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 1]]
    assert batch["prompt_ids"].tolist() == [[EOS, 1, EOS], [1, 2, EOS]]
    assert batch["prompt_attention_mask"].tolist() == [[0, 1, 1], [1, 1, 1]]


def test_fillers_keep_their_length_and_add_nothing_to_the_loss():
    data = [{"input_ids": [1, 2], "labels": [3, EOS]}]
    examples = EvalExamples(data)
    batch = CausalLMCollator(tokenizer())([examples[0], examples[1]])
    assert batch["input_ids"].tolist() == [[1, 2, EOS, 3, EOS], [1, 2, EOS, PAD, PAD]]
    assert batch["labels"].tolist() == [[X, X, X, 3, EOS], [X, X, X, X, X]]
    assert batch["index"].tolist() == [0, -1]


def test_inputs_without_targets_give_prompts_only():
    """--input_file batches: labels are empty."""
    batch = CausalLMCollator(tokenizer())([{"input_ids": [1, 2, 3], "labels": [], "index": 0},
                                           {"input_ids": [4], "labels": [], "index": 1}])
    assert batch["prompt_ids"].tolist() == [[1, 2, 3, EOS], [PAD, PAD, 4, EOS]]
    assert (batch["labels"] == X).all()


@pytest.mark.parametrize("model", ["causal_lm", "gpt2", "opt", "llama"])
def test_make_collator_routes_decoder_only_models(model):
    assert isinstance(make_collator(Config({**DEFAULTS, "model": model}), tokenizer()), CausalLMCollator)


@pytest.mark.parametrize("model", ["transformer", "bart", "t5", "bert2bert", "encoder_decoder", "rnn", "lstm"])
def test_make_collator_pads_encoder_decoder_batches(model):
    assert type(make_collator(Config({**DEFAULTS, "model": model}), tokenizer())) is Seq2SeqCollator


# --- the tokenised target layout -------------------------------------------------------------------------------
def test_lm_targets_are_text_and_eos_within_tgt_len():
    word = word_tokenizer()  # its template adds <s> ... </s> (ids 1 and 2)
    eos = word.eos_token_id
    assert encode_lm_targets(word, ["a b c", "x"], 8) == [[7, 8, 9, eos], [13, eos]]
    assert encode_lm_targets(word, ["a b c"], 3) == [[7, 8, eos]]  # tgt_len counts the eos
    with pytest.raises(ConfigError, match="tgt_len=1"):
        encode_lm_targets(word, ["a"], 1)


def test_decoder_only_runs_tokenise_targets_without_bos_and_cache_them_apart(tmp_path):
    word = word_tokenizer()
    split = Split("train", ["a b", "c d e"], [["x y"], ["e"]])
    logs = []
    base = {**DEFAULTS, "cache_dir": str(tmp_path), "src_len": 8, "tgt_len": 4}
    seq2seq = tokenize_splits(Config({**base, "model": "bart"}), {"train": split}, word, logs.append)["train"]
    causal = tokenize_splits(Config({**base, "model": "gpt2"}), {"train": split}, word, logs.append)["train"]
    assert causal["input_ids"] == seq2seq["input_ids"] == [[1, 7, 8, 2], [1, 9, 10, 11, 2]]
    assert seq2seq["labels"] == [[1, 13, 14, 2], [1, 11, 2]]
    assert causal["labels"] == [[13, 14, 2], [11, 2]]
    assert sum("into cache" in line for line in logs) == 2  # the second run did not reuse the first's entry
    digest = "t"
    assert cache_key(Config({**base, "model": "llama"}), split, digest) == \
        cache_key(Config({**base, "model": "opt"}), split, digest) != \
        cache_key(Config({**base, "model": "bart"}), split, digest) == \
        cache_key(Config({**base, "model": "transformer"}), split, digest)
