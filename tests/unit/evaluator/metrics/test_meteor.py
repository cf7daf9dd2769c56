"""meteor: NLTK's score where WordNet is installed, otherwise one clear message saying how to get it."""
from statistics import mean

import nltk
import pytest

from textbox.config.errors import TextBoxUserError
from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics.base import MetricInputs
from textbox.evaluator.metrics.meteor import meteor


def wordnet_installed() -> bool:
    try:
        nltk.data.find("corpora/wordnet")
    except LookupError:
        try:
            nltk.data.find("corpora/wordnet.zip")
        except LookupError:
            return False
    return True


@pytest.mark.skipif(wordnet_installed(), reason="WordNet is installed, so the missing-data message cannot show")
def test_missing_wordnet_is_a_user_error_saying_how_to_install_it():
    with pytest.raises(TextBoxUserError, match=r"nltk\.downloader .*wordnet.*NLTK_DATA"):
        meteor(MetricInputs(["a cat"], [["the cat"]]), DEFAULTS)


@pytest.mark.skipif(not wordnet_installed(), reason="NLTK's WordNet data is not installed here")
def test_equals_nltk_meteor_score_with_several_references():
    from nltk.corpus import wordnet
    from nltk.translate.meteor_score import meteor_score

    hypotheses = ["the cat sat on the mat", "a dog runs"]
    references = [["a cat is sitting on the mat", "the cat sat"], ["dogs are running"]]
    expected = 100 * mean(meteor_score([r.split() for r in refs], h.split(), wordnet=wordnet)
                          for h, refs in zip(hypotheses, references))
    assert meteor(MetricInputs(hypotheses, references), DEFAULTS).scores["meteor"] == pytest.approx(expected)


def test_a_run_asking_for_meteor_without_wordnet_is_refused_before_anything_runs(monkeypatch, tmp_path):
    """It used to fail only once training had finished and the test split was scored."""
    from textbox.checks import load_checked_config
    from textbox.config import ConfigError

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])  # a machine where NLTK finds no WordNet
    with pytest.raises(ConfigError, match=r"--metrics: metric 'meteor' needs NLTK's WordNet corpus.*NLTK_DATA"):
        load_checked_config(["--metrics=['bleu','meteor']"])
    load_checked_config(["--metrics=['bleu']"])


def test_meteor_1_5_is_pycocoevalcaps_on_textbox_tokens_corpus_or_sentence_mean():
    pytest.importorskip("pycocoevalcap.meteor.meteor")
    import shutil

    from nltk.tokenize import word_tokenize

    from textbox.evaluator.metrics.meteor import meteor_1_5

    if shutil.which("java") is None:
        pytest.skip("no Java runtime here for METEOR 1.5")
    hypotheses = ["The cat sat on the mat.", "A dog runs!"]
    references = [["A cat is sitting on the mat.", "The cat sat."], ["Dogs are running."]]
    words = [" ".join(word_tokenize(text, preserve_line=True)) for text in hypotheses]
    corpus, sentences = meteor_1_5().compute_score(  # the jar itself, on tokens made here
        {i: [" ".join(word_tokenize(r, preserve_line=True)) for r in refs] for i, refs in enumerate(references)},
        {i: [text] for i, text in enumerate(words)})
    options = {**DEFAULTS, "meteor_type": "pycocoevalcap"}
    result = meteor(MetricInputs(hypotheses, references), options)
    assert result.scores["meteor"] == pytest.approx(100 * corpus) and "corpus score" in result.details["aggregate"]
    by_sentence = meteor(MetricInputs(hypotheses, references), {**options, "corpus_meteor": False})
    assert by_sentence.scores["meteor"] == pytest.approx(100 * mean(sentences)) != result.scores["meteor"]
