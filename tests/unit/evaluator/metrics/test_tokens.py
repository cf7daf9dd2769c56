"""The words and sentences metrics are computed on, each as its reference tokenises: NLTK's word_tokenize for
TextBox 2.0's figures, coco-caption's Java PTBTokenizer for CIDEr."""
from __future__ import annotations

import shutil

import pytest

from textbox.evaluator.metrics.tokens import ptb_words, sentences, textbox_words

LINES = ["Amanda baked cookies. She will bring Jerry some tomorrow!", "Is it here? Yes, it's (probably) here.",
         "The U.S. team won 3.5 points.", "one sentence without a full stop", ""]


def test_textbox_words_are_nltks_word_tokenize_where_punkt_knows_no_abbreviation(punkt_model):
    from nltk.tokenize import word_tokenize

    for line in LINES:
        assert textbox_words(line) == word_tokenize(line), line


def test_files2rouge_sentences_end_at_a_full_stop_of_the_tokenised_text():
    assert sentences(LINES[0], "period") == ["Amanda baked cookies .", "She will bring Jerry some tomorrow !"]
    assert sentences("Where? Here. On", "period") == ["Where ? Here .", "On"]  # files2rouge cuts at ' . ' alone
    assert sentences("a\nb\n\nc", "newline") == ["a", "b", "c"] and sentences("a. b", "none") == ["a. b"]


def test_ptb_words_are_coco_captions_in_one_java_process():
    tokenizer = pytest.importorskip("pycocoevalcap.tokenizer.ptbtokenizer")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime here")
    expected = tokenizer.PTBTokenizer().tokenize({i: [{"caption": line}] for i, line in enumerate(LINES)})
    assert [" ".join(words) for words in ptb_words(LINES)] == [expected[i][0] for i in range(len(LINES))]
