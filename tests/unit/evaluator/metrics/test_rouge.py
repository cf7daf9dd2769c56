"""rouge must equal rouge-score's F-measures (x100, mean over examples); several references per strategy."""
from statistics import mean

import pytest
from rouge_score.rouge_scorer import RougeScorer

from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics.base import MetricInputs
from textbox.evaluator.metrics.rouge import combine_references, rouge

TYPES = {"rouge-1": "rouge1", "rouge-2": "rouge2", "rouge-l": "rougeL", "rouge-lsum": "rougeLsum"}
HYPOTHESES = ["police killed the gunman", "", "the runners ran quickly across fields"]
SINGLE = [["police kill the gunman"], ["an empty output scores zero"], ["a runner runs across the field"]]
MULTI = [["police kill the gunman", "the gunman was shot by police", "officers killed a man"],
         ["an empty output scores zero"],
         ["a runner runs across the field", "runners were running quickly"]]


def test_single_reference_equals_rouge_score_mean_f_measure():
    scorer = RougeScorer(list(TYPES.values()), use_stemmer=True)
    result = rouge(MetricInputs(HYPOTHESES, SINGLE), DEFAULTS)
    for name, rouge_type in TYPES.items():
        expected = 100 * mean(scorer.score(refs[0], hyp)[rouge_type].fmeasure for hyp, refs in zip(HYPOTHESES, SINGLE))
        assert result.scores[name] == pytest.approx(expected)
    assert list(result.scores) == [*TYPES, "rouge-w"]


def test_max_strategy_equals_rouge_score_score_multi():
    scorer = RougeScorer(list(TYPES.values()), use_stemmer=True)
    result = rouge(MetricInputs(HYPOTHESES, MULTI), DEFAULTS)
    for name, rouge_type in TYPES.items():
        expected = 100 * mean(scorer.score_multi(refs, hyp)[rouge_type].fmeasure
                              for hyp, refs in zip(HYPOTHESES, MULTI))
        assert result.scores[name] == pytest.approx(expected)


def test_leave_one_out_averages_the_best_of_the_other_references():
    assert combine_references([0.2, 0.5, 0.4], "leave_one_out") == pytest.approx((0.5 + 0.4 + 0.5) / 3)
    assert combine_references([0.3], "leave_one_out") == 0.3
    assert combine_references([0.2, 0.5, 0.4], "max") == 0.5


def test_leave_one_out_strategy_uses_rouge_score_per_reference():
    scorer = RougeScorer(["rouge1"], use_stemmer=True)
    result = rouge(MetricInputs(HYPOTHESES, MULTI), {**DEFAULTS, "multiref_strategy": "leave_one_out"})
    per_example = []
    for hyp, refs in zip(HYPOTHESES, MULTI):
        f = [scorer.score(ref, hyp)["rouge1"].fmeasure for ref in refs]
        per_example.append(max(f) if len(f) == 1 else mean(max(f[:k] + f[k + 1:]) for k in range(len(f))))
    assert result.scores["rouge-1"] == pytest.approx(100 * mean(per_example))


def test_max_ngrams_and_stemming_options():
    options = {**DEFAULTS, "rouge_max_ngrams": 3, "rouge_use_stemmer": False}
    result = rouge(MetricInputs(HYPOTHESES, SINGLE), options)
    assert list(result.scores) == ["rouge-1", "rouge-2", "rouge-3", "rouge-l", "rouge-lsum", "rouge-w"]
    scorer = RougeScorer(["rouge1"], use_stemmer=False)
    expected = 100 * mean(scorer.score(refs[0], hyp)["rouge1"].fmeasure for hyp, refs in zip(HYPOTHESES, SINGLE))
    assert result.scores["rouge-1"] == pytest.approx(expected)
    assert result.scores["rouge-1"] < rouge(MetricInputs(HYPOTHESES, SINGLE), DEFAULTS).scores["rouge-1"]


# Summaries of several sentences, as SAMSum's and CNN/DM's are: ROUGE-L depends on how they are split.
SENTENCES = [["Amanda baked cookies.", "She will bring Jerry some tomorrow."],
             ["Hannah needs Betty's number.", "Larry called her last time they were at the park together."]]
REFERENCE_SENTENCES = [["Jerry will get some cookies tomorrow.", "Amanda baked them."],
                       ["Larry called Betty last time.", "Hannah is looking for Betty's number."]]


def _files2rouge_text(sentences: list[str]) -> str:
    """What TextBox 2.0 gave ROUGE-1.5.5: NLTK's tokens of each sentence, lines split at ' . ' (files2rouge)."""
    from nltk.tokenize import NLTKWordTokenizer

    tokenized = " ".join(" ".join(NLTKWordTokenizer().tokenize(sentence.lower())) for sentence in sentences)
    return tokenized.replace(" . ", " .\n")


def test_rouge_l_with_textbox_splitting_is_rouge_lsum_over_files2rouges_sentences():
    hypotheses = [" ".join(sentences) for sentences in SENTENCES]
    references = [[" ".join(sentences)] for sentences in REFERENCE_SENTENCES]
    options = {**DEFAULTS, "rouge_sentence_split": "period"}
    result = rouge(MetricInputs([h.lower() for h in hypotheses], [[r.lower() for r in refs] for refs in references]),
                   options)
    scorer = RougeScorer(["rouge1", "rouge2", "rougeLsum"], use_stemmer=True)
    expected = [scorer.score(_files2rouge_text(refs), _files2rouge_text(hyp))
                for hyp, refs in zip(SENTENCES, REFERENCE_SENTENCES)]
    assert result.scores["rouge-l"] == pytest.approx(100 * mean(e["rougeLsum"].fmeasure for e in expected))
    assert result.scores["rouge-lsum"] == result.scores["rouge-l"]
    assert result.scores["rouge-1"] == pytest.approx(100 * mean(e["rouge1"].fmeasure for e in expected))
    unsplit = rouge(MetricInputs(hypotheses, references), DEFAULTS).scores["rouge-l"]
    assert result.scores["rouge-l"] > unsplit + 1  # one LCS over the whole text misses the second sentences
    assert "files2rouge" in result.details["rouge_l"] and result.details["sentence_split"] == "period"


def test_rouge_l_with_punkt_splitting_is_rouge_scores_split_summaries(punkt_model):
    hypotheses = ["Mr. Smith baked cookies. He will bring some tomorrow.", "The park is closed. Go home."]
    references = [["Mr. Smith will bring cookies tomorrow. He baked them."], ["Go home. The park closed."]]
    result = rouge(MetricInputs(hypotheses, references), {**DEFAULTS, "rouge_sentence_split": "punkt"})
    scorer = RougeScorer(["rougeLsum"], use_stemmer=True, split_summaries=True)
    expected = mean(scorer.score(refs[0], hyp)["rougeLsum"].fmeasure for hyp, refs in zip(hypotheses, references))
    assert result.scores["rouge-l"] == pytest.approx(100 * expected)


def test_punkt_splitting_without_nltks_data_is_refused_before_anything_runs(monkeypatch):
    import nltk

    from textbox.evaluator.metrics.registry import metric_problems

    monkeypatch.setattr(nltk.data, "path", [])
    problems = metric_problems(["rouge"], {"rouge_sentence_split": "punkt"})
    assert len(problems) == 1 and "punkt_tab" in problems[0] and "nltk.downloader" in problems[0]
    assert metric_problems(["rouge"], {"rouge_sentence_split": "period"}) == []
