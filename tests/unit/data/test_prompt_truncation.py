"""Prompts are never truncated: a source cut to fit src_len keeps its prompts as written, whitespace included,
exactly as a source that fits shows them, on every kind of tokenizer, in every path that encodes sources."""
from __future__ import annotations

import pytest

from tests.unit.data.tokenizer_kinds import TOKENIZER_KINDS
from textbox.config.loader import Config
from textbox.config.schema import DEFAULTS
from textbox.data.split import Split
from textbox.data.tokenize import encode_within, tokenize_splits

SOURCE = "A dog ran in the park, then something happened to the cat on the mat."
PROMPTS = [("", "\nTL;DR:"), ("", " => German:"), ("Summarize:\n", ""),
           ("Translate English to German: ", " => German:")]
MARK = "the"  # a word of the corpus that no prompt holds


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    cache = tmp_path_factory.mktemp("tokenizers")
    return {name: build(cache) for name, build in TOKENIZER_KINDS.items()}


def decode(tokenizer, ids: list[int]) -> str:
    return tokenizer.decode(ids, skip_special_tokens=True)


def shown_prompts(tokenizer, prefix: str, suffix: str) -> tuple[str, str]:
    """The prompts as a decoded input shows them (byte-level BPE: as written; T5: a newline as a space; BERT:
    lower case, no whitespace kept), taken from the input ``prefix + MARK + suffix``."""
    shown_prefix, _, shown_suffix = decode(tokenizer, tokenizer(prefix + MARK + suffix)["input_ids"]).partition(MARK)
    return shown_prefix, shown_suffix


@pytest.mark.parametrize("kind", TOKENIZER_KINDS)
@pytest.mark.parametrize("prefix, suffix", PROMPTS)
@pytest.mark.parametrize("truncate", ["tail", "head"])
def test_prompt_text_is_intact_after_truncation(tokenizers, kind, prefix, suffix, truncate):
    tokenizer = tokenizers[kind]
    shown_prefix, shown_suffix = shown_prompts(tokenizer, prefix, suffix)
    fits = decode(tokenizer, tokenizer(prefix + SOURCE + suffix)["input_ids"])
    assert fits.startswith(shown_prefix) and fits.endswith(shown_suffix)
    shown_source = fits[len(shown_prefix):len(fits) - len(shown_suffix)]
    length = len(tokenizer(prefix + SOURCE + suffix)["input_ids"])
    for cut in (1, 2, 5, 9):
        [ids] = encode_within(tokenizer, [SOURCE], length - cut, truncate, "src_len", prefix, suffix)
        shown = decode(tokenizer, ids)
        assert len(ids) <= length - cut
        assert shown.startswith(shown_prefix), (cut, shown)
        assert shown.endswith(shown_suffix), (cut, shown)
        body = shown[len(shown_prefix):len(shown) - len(shown_suffix)].strip()
        assert body and (shown_source.startswith(body) if truncate == "tail" else shown_source.endswith(body))


@pytest.mark.parametrize("truncate", ["tail", "head"])
def test_a_whitespace_token_of_a_prompt_is_kept(tokenizers, truncate):
    """The issue's figure: the newline of suffix "\\nTL;DR:" (tail) or of prefix "Summarize:\\n" (head) is a token
    of its own, and was the first one cut: '...on the mat.TL;DR:', 'Summarize:A dog ran ...'. Now the text goes
    (with head, what is left of it starts with its own space)."""
    tokenizer = tokenizers["framework-bpe"]
    prefix, suffix = ("", "\nTL;DR:") if truncate == "tail" else ("Summarize:\n", "")
    length = len(tokenizer(prefix + SOURCE + suffix)["input_ids"])
    [ids] = encode_within(tokenizer, [SOURCE], length - 1, truncate, "src_len", prefix, suffix)
    expected = ("A dog ran in the park, then something happened to the cat on the mat\nTL;DR:" if truncate == "tail"
                else "Summarize:\n dog ran in the park, then something happened to the cat on the mat.")
    assert decode(tokenizer, ids) == expected


@pytest.mark.parametrize("model", ["transformer", "gpt2"])  # encoder-decoder, decoder-only
@pytest.mark.parametrize("truncate", ["tail", "head"])
def test_training_and_test_inputs_keep_their_prompts(tmp_path, tokenizers, model, truncate):
    """Through tokenize_splits, as training and testing read sources: a long source shows the prompts of a short one."""
    tokenizer = tokenizers["framework-bpe" if model == "transformer" else "gpt2-style"]
    prefix, suffix = "Summarize:\n", "\nTL;DR:"
    short = "A dog ran."
    src_len = len(tokenizer(prefix + short + suffix)["input_ids"]) + 3
    config = Config({**DEFAULTS, "model": model, "cache_dir": str(tmp_path), "src_len": src_len, "tgt_len": 8,
                     "truncate": truncate, "prefix_prompt": prefix, "suffix_prompt": suffix})
    splits = {name: Split(name, [short, SOURCE], [["a cat"], ["a dog"]]) for name in ("train", "test")}
    for name, dataset in tokenize_splits(config, splits, tokenizer, log=lambda _: None).items():
        fitting, truncated = (decode(tokenizer, ids) for ids in dataset["input_ids"])
        assert fitting == prefix + short + suffix
        assert len(dataset["input_ids"][1]) <= src_len
        assert truncated.startswith(prefix) and truncated.endswith(suffix), (name, truncated)
