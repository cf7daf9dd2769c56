"""TextBox 2.0's metrics, each equal to its reference implementation: chrf+, rouge-w, qa, cider (coco-caption's
and TextBox 2.0's tokens), nist (mteval-v13a's); spice and multiwoz refused before anything runs, saying why."""
from __future__ import annotations

import shutil
import sys
import types

import pytest

from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics.registry import compute_metrics, metric_problems

HYPOTHESES = ["a cat sat on the mat today", "the dog runs to the park", "Hello, World! 42 times.", "x y z"]
REFERENCES = [["a cat sat on the mat", "the cat is on the mat"], ["a dog runs in the park"],
              ["hello world forty two times", "hello world 42 times"], ["a b c"]]


def test_chrf_plus_is_sacrebleus_chrf_with_word_unigrams():
    from sacrebleu.metrics import CHRF

    streams = [[refs[k] if k < len(refs) else None for refs in REFERENCES] for k in range(2)]
    expected = CHRF(word_order=1).corpus_score(HYPOTHESES, streams).score
    assert compute_metrics(["chrf+"], HYPOTHESES, REFERENCES).scores["chrf+"] == pytest.approx(expected)


def test_rouge_w_equals_py_rouge(monkeypatch):
    monkeypatch.setitem(sys.modules, "pkg_resources", types.ModuleType("pkg_resources"))  # py-rouge imports it only
    rouge = pytest.importorskip("rouge.rouge")
    from rouge_score.tokenizers import DefaultTokenizer

    tokenizer = DefaultTokenizer(use_stemmer=False)
    expected = []
    for hypothesis, references in zip(HYPOTHESES, REFERENCES):
        best = 0.0
        for reference in references:  # py-rouge's ROUGE-W-1.2 core on the same tokens
            counts = rouge.Rouge._compute_ngrams_lcs([" ".join(tokenizer.tokenize(hypothesis))],
                                                     [" ".join(tokenizer.tokenize(reference))], 1.2)
            best = max(best, rouge.Rouge._compute_p_r_f_score(*counts, 0.5, 1.2)["f"])
        expected.append(best)
    scores = compute_metrics(["rouge"], HYPOTHESES, REFERENCES, options={"rouge_use_stemmer": False}).scores
    assert scores["rouge-w"] == pytest.approx(100 * sum(expected) / len(expected))
    assert 0 < scores["rouge-w"] < scores["rouge-l"]  # weighting consecutive matches never raises LCS's F


def test_qa_is_em_and_f1_with_textbox_multiref_strategies():
    plain = compute_metrics(["em", "f1"], HYPOTHESES, REFERENCES).scores
    assert compute_metrics(["qa"], HYPOTHESES, REFERENCES).scores == pytest.approx(plain)
    from textbox.evaluator.metrics.squad import token_f1

    def leave_one_out(values):  # TextBox 2.0's / CoQA's formula
        ordered = sorted(values)
        return values[0] if len(values) == 1 else (ordered[-1] * (len(values) - 1) + ordered[-2]) / len(values)
    expected = [leave_one_out([token_f1(h, r) for r in refs]) for h, refs in zip(HYPOTHESES, REFERENCES)]
    scores = compute_metrics(["qa"], HYPOTHESES, REFERENCES, options={"multiref_strategy": "leave_one_out"}).scores
    assert scores["f1"] == pytest.approx(100 * sum(expected) / len(expected))


def _coco_cider(references, hypotheses):
    """coco-caption's own pipeline: pycocoevalcap's PTBTokenizer (Java), then its Cider, x10."""
    tokenizer = pytest.importorskip("pycocoevalcap.tokenizer.ptbtokenizer")
    from pycocoevalcap.cider.cider import Cider

    if shutil.which("java") is None:
        pytest.skip("no Java runtime here for coco-caption's PTB tokenizer")
    ptb = tokenizer.PTBTokenizer()
    refs = ptb.tokenize({i: [{"caption": r} for r in refs] for i, refs in enumerate(references)})
    hyps = ptb.tokenize({i: [{"caption": h}] for i, h in enumerate(hypotheses)})
    return 10 * Cider().compute_score(refs, hyps)[0]


def test_cider_equals_coco_caption_with_its_ptb_tokenizer(shared_dataset):
    assert compute_metrics(["cider"], HYPOTHESES, REFERENCES).scores["cider"] == pytest.approx(
        _coco_cider(REFERENCES, HYPOTHESES))
    # CommonGen as its official evaluation scores it: each concept set's first reference against the others
    folder = shared_dataset("commongen")
    sources = (folder / "valid.src").read_text(encoding="utf-8").splitlines()[:400]
    targets = (folder / "valid.tgt").read_text(encoding="utf-8").splitlines()[:400]
    groups: dict[str, list[str]] = {}
    for source, target in zip(sources, targets):
        groups.setdefault(source, []).append(target)
    sets = [texts for texts in groups.values() if len(texts) > 1]
    hypotheses, references = [texts[0] for texts in sets], [texts[1:] for texts in sets]
    ours = compute_metrics(["cider"], hypotheses, references).scores["cider"]
    assert ours == pytest.approx(_coco_cider(references, hypotheses)) and ours > 10


def test_cider_ignores_case_and_punctuation_as_coco_caption_and_textbox_do():
    references = [["the cat sat .", "a cat sat on a mat ."], ["a dog runs in the park"], ["birds fly south"]]
    tidy = ["the cat sat .", "a dog runs in the park", "birds fly south"]
    written = ["The Cat sat.", "A dog runs in the park!", "Birds fly south."]
    if shutil.which("java") is not None:
        assert compute_metrics(["cider"], written, references).scores["cider"] == pytest.approx(
            compute_metrics(["cider"], tidy, references).scores["cider"])
    textbox = {"coco_tokenize": "nltk", "lower_evaluation": True}
    expected = compute_metrics(["cider"], tidy, references, options=textbox).scores["cider"]
    written_score = compute_metrics(["cider"], ["The Cat sat.", *tidy[1:]], references, options=textbox)
    assert written_score.scores["cider"] == pytest.approx(expected) and expected > 50


def test_cider_with_textbox_tokens_is_cider_of_nltks_word_tokens():
    from nltk.tokenize import word_tokenize
    from pycocoevalcap.cider.cider import Cider

    def words(text: str) -> str:  # TextBox 2.0's Text.tokenized_text (one sentence: no Punkt needed)
        return " ".join(word_tokenize(text.lower(), preserve_line=True))
    expected, _ = Cider().compute_score({i: [words(r) for r in refs] for i, refs in enumerate(REFERENCES)},
                                        {i: [words(h)] for i, h in enumerate(HYPOTHESES)})
    scores = compute_metrics(["cider"], HYPOTHESES, REFERENCES,
                             options={"coco_tokenize": "nltk", "lower_evaluation": True}).scores
    assert scores["cider"] == pytest.approx(10 * expected)


def test_cider_without_java_is_refused_before_anything_runs_naming_the_textbox_tokens(monkeypatch):
    monkeypatch.setattr("textbox.evaluator.metrics.tokens.shutil.which", lambda name: None)
    problems = metric_problems(["cider"], {})
    assert len(problems) == 1 and "Java" in problems[0] and "--coco_tokenize=nltk" in problems[0]
    assert metric_problems(["cider"], {"coco_tokenize": "nltk"}) == []


# NIST: mteval-v13a.pl -n (Moses' copy, run on these segments as SGML with 3 reference sets) printed
# "NIST score = 5.1540"; NLTK's corpus_nist gives 4.5296 on the same tokens.
NIST_HYPOTHESES = ["The cat sat on the mat.", "A dog runs in the park today", "Hello world, 42 times!", "x y"]
NIST_REFERENCES = [["the cat sat on a mat .", "The cat is on the mat", "a cat was sitting on the mat"],
                   ["A dog is running in the park", "the dog runs across the park", "dogs run in parks"],
                   ["hello world forty two times", "Hello, world: 42 times", "hi world 42 times"],
                   ["x y z", "a b c", "x and y"]]


def test_nist_equals_mteval_with_three_references():
    from nltk.translate.nist_score import corpus_nist

    from textbox.evaluator.metrics.mteval import mteval_words

    score = compute_metrics(["nist"], NIST_HYPOTHESES, NIST_REFERENCES).scores["nist"]
    assert score == pytest.approx(5.1540, abs=5e-5)
    nltk_score = corpus_nist([[mteval_words(r) for r in refs] for refs in NIST_REFERENCES],
                             [mteval_words(h) for h in NIST_HYPOTHESES], n=5)
    assert abs(nltk_score - score) > 0.5  # NLTK's weights and lengths differ with several references


def test_nist_with_one_reference_equals_nltks():
    from nltk.translate.nist_score import corpus_nist

    from textbox.evaluator.metrics.mteval import mteval_words

    references = [refs[:1] for refs in NIST_REFERENCES]
    expected = corpus_nist([[mteval_words(r) for r in refs] for refs in references],
                           [mteval_words(h) for h in NIST_HYPOTHESES], n=5)
    assert compute_metrics(["nist"], NIST_HYPOTHESES, references).scores["nist"] == pytest.approx(expected)


def test_nist_of_outputs_shorter_than_five_words_is_a_figure_with_a_note():
    report = compute_metrics(["nist"], ["the cat", "a dog", ""], [["the cat sat"], ["a dog ran"], ["birds"]])
    assert 0 < report.scores["nist"] < 5 and "no output has 5 words" in report.details["nist"]["note"]
    empty = compute_metrics(["nist"], ["", ""], [["the cat sat"], ["a dog ran"]])
    assert empty.scores["nist"] == 0 and "every output is empty" in empty.details["nist"]["note"]


def test_spice_without_its_java_models_is_refused_naming_what_to_install():
    from textbox.evaluator.metrics.coco import missing_spice

    missing = missing_spice(DEFAULTS)
    if missing is None:
        pytest.skip("SPICE's Java and CoreNLP models are installed here")
    problems = metric_problems(["spice"], {})
    assert len(problems) == 1 and ("CoreNLP" in problems[0] or "Java" in problems[0] or "pip install" in problems[0])


@pytest.mark.parametrize("name", ["multiwoz", "style", "hm"])
def test_textbox_metrics_without_counterpart_say_why(name):
    problems = metric_problems([name], {})
    assert problems and problems[0].startswith(f"TextBox 2.0's metric {name!r}: ")


# TextBox 2.0's BLEU implementations (bleu_type). The Perl references, run on these segments (two references each):
# mteval-v13a.pl -b printed "BLEU score = 0.7745" (cumulative 0.9512 0.8927 0.8338 0.7745), and multi-bleu.perl, given
# the NLTK-tokenised texts, "BLEU = 78.37, 93.0/84.6/74.3/64.5 (BP=1.000, ratio=1.024, hyp_len=43, ref_len=42)".
BLEU_HYPOTHESES = ["The cat sat on the mat near the door.", "A dog runs quickly in the big park today.",
                   "He said: \"we're leaving at 10 o'clock\", didn't he?", "Birds fly south in the winter."]
BLEU_REFERENCES = [["The cat sat on the mat by the door.", "A cat was sitting on the mat near the door."],
                   ["A dog runs fast in the big park today.", "The dog is running in the park."],
                   ["He said \"we're leaving at 10 o'clock\", didn't he?", "He told us they would leave at ten."],
                   ["Birds fly south for the winter.", "In winter, the birds fly south."]]


def _bleu(**options) -> dict[str, float]:
    return compute_metrics(["bleu"], BLEU_HYPOTHESES, BLEU_REFERENCES, options=options).scores


def test_mt_eval_bleu_equals_mteval_v13a():
    scores = _bleu(bleu_type="mt-eval")
    assert [round(scores[f"bleu-{n}"] / 100, 4) for n in (1, 2, 3, 4)] == [0.9512, 0.8927, 0.8338, 0.7745]
    assert scores["bleu"] == scores["bleu-4"]
    assert _bleu(bleu_type="mt-eval") == compute_metrics(  # case-insensitive, as mteval without -c
        ["bleu"], [text.upper() for text in BLEU_HYPOTHESES], BLEU_REFERENCES, options={"bleu_type": "mt-eval"}).scores


def test_multi_bleu_equals_multi_bleu_perl_on_textbox_tokens():
    scores = _bleu(bleu_type="multi-bleu")
    assert round(scores["bleu"], 2) == 78.37 and round(scores["bleu-1"], 1) == 93.0  # BP 1: bleu-1 is the precision
    assert _bleu(bleu_type="multi-bleu")["bleu"] != _bleu()["bleu"]  # sacrebleu's 13a tokens differ


def _textbox_tokens(text: str) -> list[str]:  # TextBox 2.0's Text.tokens of one sentence (no Punkt needed)
    from nltk.tokenize import word_tokenize

    return word_tokenize(text, preserve_line=True)


@pytest.mark.parametrize("aggregate", ["corpus", "sentence"])
def test_nltk_bleu_is_nltks_on_textbox_tokens_with_its_smoothing(aggregate: str):
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu

    hypotheses = [_textbox_tokens(text) for text in BLEU_HYPOTHESES]
    references = [[_textbox_tokens(text) for text in refs] for refs in BLEU_REFERENCES]
    smoothing = SmoothingFunction().method7
    for n in (1, 2, 4):
        weights = [1 / n] * n
        if aggregate == "corpus":
            expected = corpus_bleu(references, hypotheses, weights, smoothing)
        else:
            expected = sum(sentence_bleu(refs, hyp, weights, smoothing)
                           for hyp, refs in zip(hypotheses, references)) / len(hypotheses)
        scores = _bleu(bleu_type="nltk", corpus_bleu=aggregate == "corpus", smoothing_function=7)
        assert scores[f"bleu-{n}"] == pytest.approx(100 * expected)


def test_pycocoevalcap_bleu_is_coco_captions_on_textbox_tokens():
    from pycocoevalcap.bleu.bleu import Bleu

    references = {i: [" ".join(_textbox_tokens(text)) for text in refs] for i, refs in enumerate(BLEU_REFERENCES)}
    hypotheses = {i: [" ".join(_textbox_tokens(text))] for i, text in enumerate(BLEU_HYPOTHESES)}
    expected, _ = Bleu(4).compute_score(references, hypotheses, verbose=0)
    scores = _bleu(bleu_type="pycocoevalcap")
    assert [scores[f"bleu-{n}"] for n in (1, 2, 3, 4)] == pytest.approx([100 * value for value in expected])


def test_bleu_options_that_do_not_fit_bleu_type_are_refused_before_anything_runs():
    problems = metric_problems(["bleu"], {"bleu_type": "mt-eval", "smoothing_function": 7, "bleu_tokenize": "zh"})
    assert any("smoothing_function=7 is read by bleu_type='nltk' only" in problem for problem in problems)
    assert any("bleu_tokenize='zh' is sacrebleu's tokenizer" in problem for problem in problems)
    assert metric_problems(["bleu"], {"bleu_type": "nltk", "smoothing_function": 9}) == [
        "smoothing_function must be 0-7 (NLTK's SmoothingFunction.method0-7), got 9"]
