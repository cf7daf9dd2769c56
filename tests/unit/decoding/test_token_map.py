"""The memoised id <-> token conversions CTranslate2's inputs and outputs go through, and the memoised vocabulary
in the conversion cache's key: the tokenizer's own answers, and nothing stale once tokens are added."""
from __future__ import annotations

from textbox.decoding.ctranslate2_engine import token_map


def test_the_map_gives_the_tokenizers_own_answers_for_known_and_unknown_tokens(tokenizer):
    ids = list(range(len(tokenizer))) + [3, 3, 0]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    mapped = token_map(tokenizer)
    assert mapped.tokens(ids) == tokens
    assert mapped.tokens(ids[::-1]) == tokens[::-1]  # from the memo now
    strange = [*tokens, "no-such-token", "Ġno-such-token-either"]
    assert mapped.ids(strange) == tokenizer.convert_tokens_to_ids(strange)  # unknown: the unknown token's id
    assert token_map(tokenizer) is mapped


def test_tokens_added_after_a_decode_are_mapped_and_change_the_conversion_key(tiny_bart, tokenizer):
    import copy

    from textbox.decoding.ctranslate2_cache import content_key

    grown = copy.deepcopy(tokenizer)
    before, key = token_map(grown), content_key(tiny_bart, grown, "float32")
    assert before.ids(["<newly-added>"]) == [grown.unk_token_id]
    grown.add_tokens(["<newly-added>"])
    assert token_map(grown).ids(["<newly-added>"]) == [len(grown) - 1]
    assert token_map(grown).tokens([len(grown) - 1]) == ["<newly-added>"]
    assert content_key(tiny_bart, grown, "float32") != key
