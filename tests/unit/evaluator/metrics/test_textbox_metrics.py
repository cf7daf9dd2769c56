"""TextBox 2.0's metrics, each equal to its reference implementation: chrf+, rouge-w, qa, cider, nist; spice and
multiwoz refused before anything runs, saying why."""
from __future__ import annotations

import sys
import types

import pytest

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


def test_cider_is_pycocoevalcaps_cider_d_times_ten():
    cider = pytest.importorskip("pycocoevalcap.cider.cider")
    expected, _ = cider.Cider().compute_score({i: refs for i, refs in enumerate(REFERENCES)},
                                              {i: [" ".join(h.split())] for i, h in enumerate(HYPOTHESES)})
    assert compute_metrics(["cider"], HYPOTHESES, REFERENCES).scores["cider"] == pytest.approx(10 * expected)
    same = compute_metrics(["cider"], ["a cat sat on the mat", "a dog"], [["a cat sat on the mat"], ["a dog"]])
    assert same.scores["cider"] > compute_metrics(["cider"], ["a dog", "a cat"], [["a cat sat on the mat"],
                                                                                  ["a dog"]]).scores["cider"]


def test_nist_is_nltks_corpus_nist():
    from nltk.translate.nist_score import corpus_nist

    expected = corpus_nist([[r.split() for r in refs] for refs in REFERENCES], [h.split() for h in HYPOTHESES], n=5)
    assert compute_metrics(["nist"], HYPOTHESES, REFERENCES).scores["nist"] == pytest.approx(expected)


def test_spice_without_its_java_models_is_refused_naming_what_to_install():
    from textbox.evaluator.metrics.coco import missing_spice

    missing = missing_spice()
    if missing is None:
        pytest.skip("SPICE's Java and CoreNLP models are installed here")
    problems = metric_problems(["spice"], {})
    assert len(problems) == 1 and ("CoreNLP" in problems[0] or "Java" in problems[0] or "pip install" in problems[0])


@pytest.mark.parametrize("name", ["multiwoz", "style", "hm"])
def test_textbox_metrics_without_counterpart_say_why(name):
    problems = metric_problems([name], {})
    assert problems and problems[0].startswith(f"TextBox 2.0's metric {name!r}: ")
