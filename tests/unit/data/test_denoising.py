"""Denoising pre-training data (textbox/data/denoising.py): BART's noise, its statistics and its seeds; the
source-only reader; the config checks."""
from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from textbox.checks import load_checked_config
from textbox.config import ConfigError, TextBoxUserError
from textbox.config.errors import DataError
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.collate import make_collator
from textbox.data.denoising import infill, noise_text, permute_sentences, span_lengths, split_sentences, words_to_mask
from textbox.data.readers import read_source_only_splits
from textbox.model.tokenizer import train_bpe_tokenizer

MASK = "<mask>"
WORDS = "red green blue cat dog bird tree house river stone light dark small big old new".split()


def random_texts(count: int, seed: int = 0) -> list[str]:
    """Texts of 1-4 sentences of 1-12 words each."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        sentences = [" ".join(rng.choices(WORDS, k=rng.randint(1, 12))) + rng.choice(".!?")
                     for _ in range(rng.randint(1, 4))]
        texts.append(" ".join(sentences))
    return texts


def is_subsequence(part: list[str], whole: list[str]) -> bool:
    remaining = iter(whole)
    return all(word in remaining for word in part)


# --- the noise itself -------------------------------------------------------------------------------------------
def test_mask_ratio_of_the_words_over_many_texts():
    rng = np.random.default_rng(0)
    masked = total = 0
    for text in random_texts(3000):
        words = text.split()
        noisy, count = infill(words, 0.3, 3.5, rng, MASK)
        kept = [word for word in noisy if word != MASK]
        assert len(kept) == len(words) - count and is_subsequence(kept, words)
        masked, total = masked + count, total + len(words)
    assert abs(masked / total - 0.3) < 0.01


def test_span_lengths_are_poisson_with_mean_lambda():
    rng = np.random.default_rng(1)
    for poisson_lambda in (3.5, 1.0):
        lengths = []
        for _ in range(300):
            drawn = span_lengths(200, poisson_lambda, rng)
            assert sum(drawn) == 200
            lengths.extend(drawn[:-1])  # the last one is cut to fit
        assert abs(np.mean(lengths) - poisson_lambda) < 0.05 * poisson_lambda
        assert abs(np.var(lengths) - poisson_lambda) < 0.1 * poisson_lambda  # Poisson: variance = mean
    assert span_lengths(0, 3.5, rng) == []


def test_each_span_is_one_mask_and_empty_spans_insert_one():
    """Spans never touch, so the masks counted in the output are the spans drawn, insertions included."""
    rng = np.random.default_rng(2)
    insertions = 0
    for text in random_texts(500, seed=3):
        words = text.split()
        state = rng.bit_generator.state
        noisy, count = infill(words, 0.4, 1.0, rng, MASK)
        replay = np.random.default_rng()
        replay.bit_generator.state = state
        spans = span_lengths(words_to_mask(len(words), 0.4, replay), 1.0, replay)
        if len(spans) <= len(words) - count + 1:  # no merging needed
            assert noisy.count(MASK) == len(spans)
            insertions += spans.count(0)
        assert all(not (a == MASK and b == MASK) for a, b in zip(noisy, noisy[1:]))
    assert insertions > 50


def test_permutation_keeps_the_sentences():
    rng = np.random.default_rng(4)
    changed = 0
    for text in random_texts(300, seed=5):
        sentences = split_sentences(text)
        permuted = permute_sentences(sentences, 1.0, rng)
        assert Counter(permuted) == Counter(sentences)
        changed += permuted != sentences
        assert permute_sentences(sentences, 0.0, rng) == sentences
    assert changed > 100


def test_split_sentences_on_sentence_ends():
    assert split_sentences("One two. Three? Four! five") == ["One two.", "Three?", "Four!", "five"]
    assert split_sentences("version 3.5 is out.") == ["version 3.5 is out."]


def test_noise_text_without_masking_is_a_permutation_of_words():
    rng = np.random.default_rng(6)
    text = "a b c. d e f! g h?"
    noisy = noise_text(text, rng, MASK, 0.0, 3.5, 1.0)
    assert Counter(noisy.split()) == Counter(text.split()) and MASK not in noisy
    masked = noise_text("one two three four five six seven eight nine ten", rng, MASK, 0.5, 2.0, 0.0)
    assert MASK in masked and f" {MASK}" not in masked  # written against the word before it


# --- the collator ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    texts = random_texts(300, seed=7)
    return train_bpe_tokenizer(texts, vocab_size=300, min_frequency=1, cache_dir=tmp_path_factory.mktemp("tok"),
                               log=lambda _: None)


def config(**changes) -> Config:
    return Config({**DEFAULTS, "pretrain_task": "denoising", "src_len": 128, "tgt_len": 128, **changes})


def examples(tokenizer, texts: list[str], with_index: bool = False) -> list[dict]:
    rows = []
    for i, text in enumerate(texts):
        ids = tokenizer(text)["input_ids"]
        rows.append({"input_ids": ids, "labels": list(ids), **({"index": i} if with_index else {})})
    return rows


def test_collator_noises_inputs_and_keeps_targets(tokenizer):
    texts = random_texts(32, seed=8)
    batch = make_collator(config(), tokenizer)(examples(tokenizer, texts))
    for row, text in enumerate(texts):
        labels = [t for t in batch["labels"][row].tolist() if t != -100]
        assert tokenizer.decode(labels, skip_special_tokens=True) == text
        ids = batch["input_ids"][row][batch["attention_mask"][row].bool()].tolist()
        assert ids[0] == tokenizer.bos_token_id and ids[-1] == tokenizer.eos_token_id
    masks = (batch["input_ids"] == tokenizer.mask_token_id).sum().item()
    assert masks >= 20
    assert (batch["input_ids"] == tokenizer.pad_token_id).eq(batch["attention_mask"] == 0).all()


def test_collator_is_reproducible_per_seed(tokenizer):
    rows = examples(tokenizer, random_texts(16, seed=9))
    first = make_collator(config(seed=1), tokenizer)(rows)
    again = make_collator(config(seed=1), tokenizer)(rows)
    other = make_collator(config(seed=2), tokenizer)(rows)
    assert first["input_ids"].equal(again["input_ids"])
    assert not first["input_ids"].equal(other["input_ids"])


def test_training_noise_changes_with_the_batch_and_evaluation_noise_follows_the_index(tokenizer):
    collate = make_collator(config(), tokenizer)
    rows = examples(tokenizer, random_texts(16, seed=10))
    shuffled = [rows[i] for i in [3, 0, 1, 2, *range(4, 16)]]  # another epoch's batch: new noise
    assert not collate(rows)["input_ids"][:4].equal(collate(shuffled)["input_ids"][[1, 2, 3, 0]])
    indexed = examples(tokenizer, random_texts(16, seed=10), with_index=True)
    alone = collate(indexed[5:6])["input_ids"][0]
    together = collate(indexed)["input_ids"][5]
    assert together[:len(alone)].equal(alone)  # the same noise whatever the batch


def test_collator_needs_a_mask_token(tokenizer):
    class NoMask:
        mask_token = None
        mask_token_id = None
        pad_token_id = 1

    with pytest.raises(TextBoxUserError, match="has none"):
        make_collator(config(), NoMask())


# --- reading ---------------------------------------------------------------------------------------------------
def test_read_source_only_splits(tmp_path: Path):
    (tmp_path / "train.src").write_text("one. two\nthree\n")
    (tmp_path / "valid.src").write_text("four\n")
    splits = read_source_only_splits(config(data_path=str(tmp_path)), ["train", "valid"], log=lambda _: None)
    assert splits["train"].sources == ["one. two", "three"]
    assert splits["train"].targets == [["one. two"], ["three"]] and splits["valid"].targets == [["four"]]
    with pytest.raises(DataError, match="test.src does not exist; denoising pre-training reads test.src alone"):
        read_source_only_splits(config(data_path=str(tmp_path)), ["test"], log=lambda _: None)
    (tmp_path / "test.src").write_text("ok\n\n")
    with pytest.raises(DataError, match=r"test.src:2: the source is empty"):
        read_source_only_splits(config(data_path=str(tmp_path)), ["test"], log=lambda _: None)
    quick = read_source_only_splits(config(data_path=str(tmp_path), quick_test=1), ["train"], log=lambda _: None)
    assert quick["train"].sources == ["one. two"]


def test_read_source_only_splits_from_jsonl(tmp_path: Path):
    (tmp_path / "train.jsonl").write_text('{"text": "a b. c"}\n{"text": "d"}\n')
    splits = read_source_only_splits(config(data_path=str(tmp_path), src_field="text",
                                            cache_dir=str(tmp_path / "cache")), ["train"], log=lambda _: None)
    assert splits["train"].sources == ["a b. c", "d"] and splits["train"].targets == [["a b. c"], ["d"]]


# --- configuration ---------------------------------------------------------------------------------------------
def test_pretraining_is_validated_by_loss_on_a_model_with_a_mask_token(data_dir: Path):
    load_checked_config([f"--data_path={data_dir}", "--pretrain_task=denoising"])
    load_checked_config([f"--data_path={data_dir}", "--pretrain_task=denoising", "--model=gru"])
    with pytest.raises(ConfigError) as caught:
        load_checked_config([f"--data_path={data_dir}", "--pretrain_task=denoising",
                             "--metrics_for_best_model=['bleu']", "--mask_ratio=1.5", "--poisson_lambda=0",
                             "--permute_sentence_ratio=-1"])
    text = str(caught.value)
    assert "pre-training is validated by its loss" in text and "--mask_ratio must be in [0, 1]" in text
    assert "--poisson_lambda must be positive" in text and "--permute_sentence_ratio must be in [0, 1]" in text
    with pytest.raises(ConfigError, match="'t5'.s tokenizer has none"):
        load_checked_config([f"--data_path={data_dir}", "--pretrain_task=denoising", "--model=t5",
                             "--model_path=t5-small"])
    with pytest.raises(ConfigError, match="--model=gpt2 is decoder-only"):
        load_checked_config([f"--data_path={data_dir}", "--pretrain_task=denoising", "--model=gpt2",
                             "--model_path=gpt2"])
