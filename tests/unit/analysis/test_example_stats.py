"""Per-example statistics must reproduce the metric suite's corpus figures, on the whole set and on subsets."""
import numpy as np
import pytest
import sacrebleu

from textbox.analysis.example_stats import example_statistics, supported_figures
from textbox.config.errors import TextBoxUserError
from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics import compute_metrics

HYPOTHESES = ["The cat sat on the mat.", "", "A man is playing a guitar on stage.", "Two dogs run",
              "the weather is NICE today"]
REFERENCES = [["The cat is sitting on the mat.", "A cat sat on the mat."],
              ["Nothing was said."],
              ["A man plays the guitar on a stage.", "Someone is playing guitar.", "A musician on stage."],
              ["Two dogs are running in the snow."],
              ["The weather is nice today."]]
METRIC_OF = {"bleu": "bleu", "chrf": "chrf", "chrf++": "chrf++", "ter": "ter", "rouge-1": "rouge",
             "rouge-l": "rouge", "em": "em", "f1": "f1"}


@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("figure", list(METRIC_OF))
def test_corpus_score_equals_the_metric_suite(figure, lowercase):
    options = {**DEFAULTS, "lower_evaluation": lowercase}
    statistics = example_statistics(figure, HYPOTHESES, REFERENCES, options)
    expected = compute_metrics([METRIC_OF[figure]], HYPOTHESES, REFERENCES, options=options).scores[figure]
    assert statistics.score() == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("figure", ["bleu", "chrf", "ter", "rouge-2", "f1"])
def test_a_subset_scores_as_the_metric_suite_scores_those_examples(figure):
    statistics = example_statistics(figure, HYPOTHESES, REFERENCES, DEFAULTS)
    subset = [0, 2, 3]
    weights = np.isin(np.arange(len(HYPOTHESES)), subset).astype(float)
    expected = compute_metrics([METRIC_OF.get(figure, "rouge")], [HYPOTHESES[i] for i in subset],
                               [REFERENCES[i] for i in subset], options=DEFAULTS).scores[figure]
    assert statistics.score(weights) == pytest.approx(expected, abs=1e-9)


def test_bootstrap_weights_count_an_example_as_often_as_it_was_drawn():
    statistics = example_statistics("bleu", HYPOTHESES, REFERENCES, DEFAULTS)
    drawn = [0, 0, 2, 4, 4]
    streams = [[REFERENCES[i][k] if k < len(REFERENCES[i]) else None for i in drawn] for k in range(3)]
    expected = sacrebleu.corpus_bleu([HYPOTHESES[i] for i in drawn], streams).score
    assert statistics.score(np.bincount(drawn, minlength=5).astype(float)) == pytest.approx(expected, abs=1e-9)


def test_sentence_scores_are_sacrebleus_sentence_scores():
    bleu = example_statistics("bleu", HYPOTHESES, REFERENCES, DEFAULTS)
    chrf = example_statistics("chrf", HYPOTHESES, REFERENCES, DEFAULTS)
    ter = example_statistics("ter", HYPOTHESES, REFERENCES, DEFAULTS)
    for index, (hypothesis, references) in enumerate(zip(HYPOTHESES, REFERENCES)):
        assert bleu.sentence_scores[index] == pytest.approx(sacrebleu.sentence_bleu(hypothesis, references).score)
        assert chrf.sentence_scores[index] == pytest.approx(sacrebleu.sentence_chrf(hypothesis, references).score)
        assert ter.sentence_scores[index] == pytest.approx(sacrebleu.sentence_ter(hypothesis, references).score)


def test_mean_figures_score_each_example_on_its_own():
    statistics = example_statistics("rouge-l", HYPOTHESES, REFERENCES, DEFAULTS)
    for index, (hypothesis, references) in enumerate(zip(HYPOTHESES, REFERENCES)):
        expected = compute_metrics(["rouge"], [hypothesis], [references], options=DEFAULTS).scores["rouge-l"]
        assert statistics.sentence_scores[index] == pytest.approx(expected)
    assert "mean over examples" in statistics.method


def test_direction_comes_from_the_metric_registry():
    assert example_statistics("BLEU", HYPOTHESES, REFERENCES, DEFAULTS).higher_is_better
    assert not example_statistics("ter", HYPOTHESES, REFERENCES, DEFAULTS).higher_is_better


def test_supported_figures_follow_the_rouge_order_option():
    assert "rouge-3" in supported_figures({**DEFAULTS, "rouge_max_ngrams": 3})
    assert "rouge-3" not in supported_figures(DEFAULTS)


@pytest.mark.parametrize("figure, hint", [("rouge", "did you mean 'rouge-"), ("distinct-1", "choose one of")])
def test_a_figure_without_per_example_statistics_is_a_user_error(figure, hint):
    with pytest.raises(TextBoxUserError, match=f"--metric={figure} cannot be analysed per example") as error:
        example_statistics(figure, HYPOTHESES, REFERENCES, DEFAULTS)
    assert hint in str(error.value) and "rouge-l" in str(error.value)


def test_bleu_of_another_implementation_is_not_decomposed_as_sacrebleus():
    with pytest.raises(TextBoxUserError, match="bleu_type='nltk'.*sacrebleu's corpus BLEU only"):
        example_statistics("bleu", HYPOTHESES, REFERENCES, {**DEFAULTS, "bleu_type": "nltk"})
