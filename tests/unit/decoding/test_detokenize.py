"""Background detokenisation returns texts in dataset order, one line each, and reports lost examples."""
from __future__ import annotations

import pytest
import torch

from textbox.decoding.detokenize import BackgroundDetokenizer, one_line


class _Letters:
    """A stand-in tokenizer: id n is the n-th letter, 0 is a special token."""

    def batch_decode(self, rows, skip_special_tokens):
        assert skip_special_tokens
        return ["".join(chr(96 + token) if token != 26 else "\n" for token in row if token) for row in rows]


def test_texts_come_back_in_index_order():
    with BackgroundDetokenizer(_Letters()) as detokenizer:
        detokenizer.submit(torch.tensor([[3, 1, 20], [4, 15, 0]]), torch.tensor([2, 0]))
        detokenizer.submit(torch.tensor([[2, 9, 18, 4]]), torch.tensor([1]))
        assert detokenizer.texts(3) == ["do", "bird", "cat"]


def test_repeats_count_once_fillers_are_dropped_and_a_missing_example_is_an_error():
    with BackgroundDetokenizer(_Letters()) as detokenizer:
        detokenizer.submit(torch.tensor([[1], [1], [2]]), torch.tensor([0, 0, -1]))
        assert detokenizer.texts(1) == ["a"]
        with pytest.raises(RuntimeError, match="1 distinct example indices for 2 examples"):
            detokenizer.texts(2)


def test_decoding_errors_reach_the_caller():
    class Broken:
        def batch_decode(self, rows, skip_special_tokens):
            raise KeyError("no such token")

    with BackgroundDetokenizer(Broken()) as detokenizer:
        detokenizer.submit(torch.tensor([[1]]), torch.tensor([0]))
        with pytest.raises(KeyError, match="no such token"):
            detokenizer.texts(1)


def test_newlines_inside_a_generation_are_flattened():
    assert one_line(" two\nlines  here ") == "two lines here"
    with BackgroundDetokenizer(_Letters()) as detokenizer:
        detokenizer.submit(torch.tensor([[1, 26, 2]]), torch.tensor([0]))
        assert detokenizer.texts(1) == ["a b"]


def test_k_rows_per_example_stay_with_their_example_in_order():
    """num_return_sequences=2: rows 2i and 2i+1 belong to the batch's i-th example (generate's layout)."""
    with BackgroundDetokenizer(_Letters()) as detokenizer:
        detokenizer.submit(torch.tensor([[3], [4], [1], [2], [5], [6]]), torch.tensor([1, 0, -1]))
        detokenizer.submit(torch.tensor([[7], [8]]), torch.tensor([2]))
        assert detokenizer.sequences(3) == [["a", "b"], ["c", "d"], ["g", "h"]]
        assert detokenizer.texts(3) == ["a", "c", "g"]
        with pytest.raises(ValueError, match="3 generated rows for 2 examples"):
            detokenizer.submit(torch.tensor([[1], [2], [3]]), torch.tensor([0, 1]))


def test_the_rust_decoder_gives_batch_decodes_texts(tokenizer):
    """The project's fast tokenizer is decoded by its Rust decoder in one call: the same texts as batch_decode,
    special tokens and padding left out, empty rows included."""
    from textbox.decoding.detokenize import _rust_decode_batch, detokenized

    every = list(range(len(tokenizer)))
    pad, end = tokenizer.pad_token_id, tokenizer.eos_token_id
    rows = [every, every[::-1], [], [pad] * 3, [5, end, 7, pad]]
    assert _rust_decode_batch(tokenizer) is not None
    assert detokenized(tokenizer, rows) == [one_line(text) for text in
                                            tokenizer.batch_decode(rows, skip_special_tokens=True)]
    assert detokenized(tokenizer, []) == []


def test_a_tokenizer_that_decodes_its_own_way_keeps_its_decoding(tokenizer):
    """A tokenizer class with its own _decode, or one that cleans up spaces, is decoded by batch_decode."""
    import copy

    from textbox.decoding.detokenize import _rust_decode_batch, detokenized

    class Shouting(type(tokenizer)):
        def _decode(self, token_ids, skip_special_tokens=False, **kwargs):
            return super()._decode(token_ids, skip_special_tokens=skip_special_tokens, **kwargs).upper()

    shouting = copy.copy(tokenizer)
    shouting.__class__ = Shouting
    rows = [list(range(5, 15)), [20, 21]]
    assert detokenized(shouting, rows) == [one_line(text).upper() for text in
                                           tokenizer.batch_decode(rows, skip_special_tokens=True)]
    tidy = copy.deepcopy(tokenizer)
    tidy.clean_up_tokenization_spaces = True
    assert _rust_decode_batch(tidy) is None and _rust_decode_batch(shouting) is None
