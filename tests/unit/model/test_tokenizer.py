from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from textbox.model.tokenizer import train_bpe_tokenizer, training_sample


@pytest.fixture
def train(corpus):
    """train(cache_dir, ...) with the shared corpus and the tiny vocabulary unless told otherwise."""

    def run(cache_dir, texts=corpus, vocab_size=300, min_frequency=2, messages=None):
        log = messages.append if messages is not None else (lambda message: None)
        return train_bpe_tokenizer(texts, vocab_size=vocab_size, min_frequency=min_frequency, cache_dir=cache_dir,
                                   log=log)

    return run


def test_special_tokens_have_bart_ids_and_wrap_every_encoding(tmp_path, train):
    tokenizer = train(tmp_path)
    ids = [tokenizer.convert_tokens_to_ids(token) for token in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")]
    assert ids == [0, 1, 2, 3, 4]
    assert (tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id) == (0, 1, 2)
    encoded = tokenizer("a dog reads a red book.").input_ids
    assert encoded[0] == 0 and encoded[-1] == 2 and len(encoded) > 2


def test_vocabulary_is_learned_up_to_the_requested_size(tmp_path, train):
    tokenizer = train(tmp_path, vocab_size=300)
    assert 261 < len(tokenizer) <= 300  # 256 bytes + 5 specials, then merges
    assert len(tokenizer("the teacher watches").input_ids) < len("the teacher watches") + 2


def test_decode_gives_back_clean_text_even_for_unseen_characters(tmp_path, train):
    tokenizer = train(tmp_path)
    for text in ["the cat cleans some café menus.", "Ünïcödé 😀 and\ttabs", "  leading spaces"]:
        ids = tokenizer(text).input_ids
        assert tokenizer.convert_tokens_to_ids("<unk>") not in ids
        assert tokenizer.decode(ids, skip_special_tokens=True) == text


def test_second_call_loads_the_cached_tokenizer(tmp_path, train):
    first_messages, second_messages = [], []
    first = train(tmp_path, messages=first_messages)
    second = train(tmp_path, messages=second_messages)
    cached = list((tmp_path / "tokenizers").iterdir())
    assert len(cached) == 1
    assert "trained" in first_messages[0]
    assert second_messages == [f"loaded tokenizer from cache {cached[0]}"]
    assert second.get_vocab() == first.get_vocab()


@pytest.mark.parametrize("damage", ["overwritten", "cut short", "no record"])
def test_a_damaged_cached_tokenizer_is_trained_again(tmp_path, train, damage):
    """A cached tokenizer.json overwritten in place (a bad sector, a stray write) was loaded as it was: a JSON or
    UTF-8 error as a traceback, or another vocabulary. Its checksum is recorded when it is cached and checked when
    it is read: the entry is named and the tokenizer trained again, the same one."""
    first = train(tmp_path)
    (cached,) = (tmp_path / "tokenizers").iterdir()
    path = cached / "tokenizer.json"
    data = path.read_bytes()
    if damage == "overwritten":
        path.write_bytes(data[:len(data) // 2] + b"\xff\xfe\x00\x01" + data[len(data) // 2 + 4:])
    elif damage == "cut short":
        path.write_bytes(data[:len(data) // 2])
    else:
        (cached / "textbox_checksums.json").unlink()
    messages: list[str] = []
    again = train(tmp_path, messages=messages)
    assert messages[0].startswith(f"the cached tokenizer {cached} is damaged (")
    assert "trained" in messages[1]
    assert again.get_vocab() == first.get_vocab() and path.read_bytes() == data
    assert train(tmp_path, messages=messages).get_vocab() == first.get_vocab()
    assert messages[2] == f"loaded tokenizer from cache {cached}"


def test_other_texts_or_settings_get_their_own_cache_entry(tmp_path, train, corpus):
    train(tmp_path)
    train(tmp_path, vocab_size=280)
    train(tmp_path, min_frequency=3)
    train(tmp_path, texts=corpus[:-1])
    train(tmp_path, texts=["ab", "c"])
    train(tmp_path, texts=["a", "bc"])
    assert len(list((tmp_path / "tokenizers").iterdir())) == 6


def test_saved_tokenizer_reloads_with_auto_tokenizer(tmp_path, train):
    tokenizer = train(tmp_path / "cache")
    tokenizer.save_pretrained(tmp_path / "saved")
    reloaded = AutoTokenizer.from_pretrained(tmp_path / "saved")
    text = "my friend paints the small boat."
    assert reloaded(text).input_ids == tokenizer(text).input_ids
    assert reloaded.pad_token_id == 1 and reloaded.eos_token_id == 2


def test_a_sample_smaller_than_the_corpus_trains_on_exactly_the_texts_drawn(tmp_path):
    """tokenizer_train_sample: a uniform draw seeded by the run's seed, in corpus order; the tokenizer is the one
    trained on those texts alone, and the texts drawn name the cache entry."""
    texts = [f"text {i} " + " ".join(["word", "other", "thing"][i % 3] * (i % 4 + 1)) for i in range(60)]
    drawn = training_sample(texts, 20, seed=7)
    assert drawn == training_sample(texts, 20, seed=7) and len(set(drawn)) == 20
    assert drawn == [text for text in texts if text in set(drawn)]  # corpus order kept
    assert drawn != training_sample(texts, 20, seed=8)
    sampled = train_bpe_tokenizer(texts, 300, 1, tmp_path / "sampled", log=lambda _: None, sample=20, seed=7)
    alone = train_bpe_tokenizer(drawn, 300, 1, tmp_path / "alone", log=lambda _: None)
    assert sampled.get_vocab() == alone.get_vocab()
    assert [p.name for p in (tmp_path / "sampled" / "tokenizers").iterdir()] == \
        [p.name for p in (tmp_path / "alone" / "tokenizers").iterdir()]


def test_another_sample_size_trains_its_own_entry_and_a_small_corpus_keeps_the_whole_corpus_entry(tmp_path, corpus):
    def entries(**sample) -> set[str]:
        train_bpe_tokenizer(corpus, 300, 2, tmp_path, log=lambda _: None, **sample)
        return {path.name for path in (tmp_path / "tokenizers").iterdir()}

    whole = entries()
    assert entries(sample=len(corpus)) == whole and entries(sample=10 * len(corpus), seed=3) == whole
    assert len(entries(sample=len(corpus) // 2)) == 2
    assert len(entries(sample=len(corpus) // 3)) == 3
