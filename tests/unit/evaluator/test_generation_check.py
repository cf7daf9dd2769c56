"""generation_kwargs are checked with the rest of the config: a bad value is exit 2 naming the key and the reason,
before anything is built (it used to train, then die in generate with a ZeroDivisionError)."""
from __future__ import annotations

from pathlib import Path

import pytest

from textbox.cli import run_cli
from textbox.checks import load_checked_config
from textbox.config import ConfigError
from textbox.evaluator.generation_check import generation_problems


def _problems(kwargs):
    return generation_problems(kwargs, lambda name: f"--{name}")


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"num_beams": 0}, "'num_beams' must be at least 1, got 0"),
    ({"num_beams": 2.5}, "'num_beams' must be an integer"),
    ({"num_return_sequences": 0}, "'num_return_sequences' must be at least 1"),
    ({"num_return_sequences": 3, "num_beams": 2}, "'num_return_sequences' (3) needs num_beams >= 3"),
    ({"num_return_sequences": 2}, "or do_sample=True"),
    ({"max_new_tokens": 0}, "'max_new_tokens' must be at least 1"),
    ({"min_new_tokens": -1}, "'min_new_tokens' must be at least 0"),
    ({"max_length": -3}, "'max_length' must be at least 1"),
    ({"min_length": -1}, "'min_length' must be at least 0"),
    ({"min_new_tokens": 9, "max_new_tokens": 4}, "'min_new_tokens' (9) is larger than 'max_new_tokens' (4)"),
    ({"min_length": 9, "max_length": 4}, "'min_length' (9) is larger than 'max_length' (4)"),
    ({"max_new_tokens": 9, "max_length": 20}, "'max_new_tokens' and 'max_length' are both set"),
    ({"min_new_tokens": 1, "min_length": 2}, "'min_new_tokens' and 'min_length' are both set"),
    ({"no_repeat_ngram_size": -1}, "'no_repeat_ngram_size' must be at least 0"),
    ({"temperature": 0, "do_sample": True}, "'temperature' must be a number above 0"),
    ({"top_p": 0.0, "do_sample": True}, "'top_p' must be a number in (0, 1]"),
    ({"top_p": 1.2, "do_sample": True}, "'top_p' must be a number in (0, 1]"),
    ({"top_k": -5, "do_sample": True}, "'top_k' must be at least 0"),
    ({"do_sample": "yes"}, "'do_sample' must be True or False"),
    ({"num_beam": 4}, "unknown generation setting 'num_beam'; did you mean 'num_beams'?"),
    ({"num_beam_groups": 2, "num_beams": 4}, "'num_beam_groups' is not accepted: diverse (group) beam search"),
    ({"diversity_penalty": 0.5, "num_beams": 4}, "fails offline"),
    ({"penalty_alpha": 0.6, "top_k": 4}, "'penalty_alpha' is not accepted: contrastive search"),
    ({"output_scores": True}, "only the generated sequences"),
    ({"num_assistant_tokens": 5}, "assisted decoding needs an assistant model"),
])
def test_our_rules_name_the_key_and_the_reason(kwargs, expected):
    problems = _problems(kwargs)
    assert problems and all(problem.startswith("--generation_kwargs: ") for problem in problems)
    assert any(expected in problem for problem in problems), problems


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"temperature": 0.7}, "`temperature` is set to `0.7` -- this flag is only used in sample-based"),
    ({"length_penalty": 2.0}, "`length_penalty` is set to `2.0` -- this flag is only used in beam-based"),
    ({"early_stopping": "soon", "num_beams": 2}, "`early_stopping` must be a boolean or 'never'"),
    ({"cache_implementation": "fast"}, "Invalid `cache_implementation` (fast)"),
    ({"suppress_tokens": [2], "forced_eos_token_id": 2}, "is also in `suppress_tokens`"),
])
def test_transformers_validation_is_strict_and_becomes_our_message(kwargs, expected):
    """What GenerationConfig would only log (a setting that does nothing in this mode) is an error here."""
    problems = _problems(kwargs)
    assert len(problems) == 1 and "transformers says: " in problems[0] and expected in problems[0], problems
    assert "\n" not in problems[0]


@pytest.mark.parametrize("kwargs", [
    {}, {"num_beams": 4}, {"num_beams": 4, "num_return_sequences": 4, "length_penalty": 0.8, "early_stopping": True},
    {"do_sample": True, "num_return_sequences": 3, "top_k": 0, "top_p": 0.9, "temperature": 0.7},
    {"no_repeat_ngram_size": 3, "min_new_tokens": 0, "max_new_tokens": 20, "repetition_penalty": 1.2},
    {"max_length": 30, "min_length": 2, "stop_strings": ["."]},
])
def test_good_settings_pass(kwargs):
    assert _problems(kwargs) == []


def test_checked_by_load_checked_config_with_the_other_keys(tmp_path: Path):
    with pytest.raises(ConfigError) as raised:
        load_checked_config(["--dataset=pydoc", "--generation_kwargs={'num_beams': 0, 'top_p': 2.0}", "--epochz=1"])
    message = str(raised.value)
    assert "--generation_kwargs: 'num_beams' must be at least 1, got 0" in message
    assert "--generation_kwargs: 'top_p' must be a number in (0, 1], got 2.0" in message
    assert "did you mean 'epochs'" in message


def test_cli_exit_2_before_anything_runs(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ran = []
    assert run_cli(["--dataset=pydoc", "--generation_kwargs={'num_beams':0}"], runner=ran.append) == 2
    assert not ran
    err = capsys.readouterr().err
    assert "--generation_kwargs: 'num_beams' must be at least 1, got 0" in err and "Traceback" not in err
    assert not (tmp_path / "saved").exists()
