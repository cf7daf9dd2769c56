"""The embedded default's set: the key words of a summary line -> the summary line (textbox/data/pydoc_keywords.py)."""
from __future__ import annotations

import textwrap

import pytest

from textbox.data import pydoc
from textbox.data.pydoc_keywords import FUNCTION_WORDS, build, collect_pairs, keywords, signature


def read(directory, name: str) -> list[str]:
    return (directory / name).read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("sentence, words", [
    ("Return the sum of a and b.", "b return sum"),  # articles, prepositions and conjunctions go; sorted
    ("Set the counter back to zero.", "back counter set zero"),
    ("Return True if the value is not empty.", "empty not return true value"),  # a negation carries meaning
    ("Install the path-based import hooks for each path.", "each hooks import install path path-based"),
    ("Ring a display's bell.", "bell display's ring"),  # each word once, as written
])
def test_keywords_are_the_content_words_lower_cased_once_and_sorted(sentence, words):
    assert keywords(sentence) == words


def test_a_sentence_of_function_words_alone_keeps_them():
    assert keywords("It is what it is.") == "is it what"
    assert {"a", "the", "of", "is"} <= FUNCTION_WORDS and not {"not", "no", "all", "each", "any"} & FUNCTION_WORDS


TARGETS = ["Return the sum of a and b.", "This function has only a docstring.", "Increase the counter by step.",
           "Set the counter back to zero.", "Upper-case the text and add an exclamation mark.", "Fetch the page at url.",
           "Return a very long list of numbers."]
GROUPS = ["numbers:add", "numbers:only_doc", "numbers:Counter", "numbers:Counter", "strings:shout", "words:fetch",
          "words:huge"]


def test_only_plain_word_summaries_each_once_in_pydocs_order(fake_stdlib, fake_roots):
    # zmore.py is read after numbers.py
    (fake_stdlib / "zmore.py").write_text(textwrap.dedent('''
        def code_summary(x):
            """Compute f(x) * 2 for the input."""
            return x

        def again(a, b):
            """return the sum of a and b"""
            return b + a
        '''))
    pairs, unparsable = collect_pairs(fake_roots)
    # "Join os.path.join ..." and "Compute f(x) * 2 ..." hold code; "return the sum of a and b" repeats
    # "Return the sum of a and b." (case and final period aside); pydoc's own rules (too short, not a summary) hold
    assert [pair.target for pair in pairs] == TARGETS
    assert [pair.source for pair in pairs] == [keywords(target) for target in TARGETS]
    assert [pair.group for pair in pairs] == GROUPS
    assert unparsable == 1


def test_build_writes_aligned_splits_by_class_and_is_deterministic(fake_roots, tmp_path):
    messages: list[str] = []
    first, second = tmp_path / "first", tmp_path / "second"
    for directory in (first, second):
        directory.mkdir()
        build(directory, messages.append, roots=fake_roots)
    pairs, _ = collect_pairs(fake_roots)
    for split in ("train", "valid", "test"):
        members = [pair for pair in pairs if pydoc.split_of(pair.group) == split]
        assert read(first, f"{split}.src") == [pair.source for pair in members]
        assert read(first, f"{split}.tgt") == [pair.target for pair in members]
    for name in ("train.src", "train.tgt", "valid.src", "valid.tgt", "test.src", "test.tgt", "README.txt"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    assert read(first, "valid.src") == ["fetch page url"]
    assert messages[0].startswith("pydoc_keywords: train ")


def test_signature_holds_its_own_rules_and_pydocs():
    assert signature().startswith("pydoc_keywords 1; " + pydoc.signature())
