"""textbox.checks: the config package's problems and every registry's, in one ConfigError, before anything runs
(that the config package on its own imports no registry: tests/unit/test_light_imports.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from textbox.checks import check_config, load_checked_config
from textbox.config import Config, ConfigError, load_config
from textbox.config.schema import DEFAULTS


@pytest.fixture
def data(data_dir: Path) -> Path:
    """The toy dataset (tests/conftest.py)."""
    return data_dir


def test_config_and_registry_problems_come_in_one_error(data: Path):
    with pytest.raises(ConfigError) as caught:
        load_checked_config([f"--data_path={data}", "--epochz=1", "--epochs=0", "--model=bartt",
                             "--metrics=['bleuu']", "--generation_kwargs={'num_beams': 0}",
                             "--decoding_backend=transformers", "--decoding_precision=int8"])
    problems = caught.value.problems
    assert problems[0].startswith("unknown key --epochz; did you mean 'epochs'?")
    assert "--epochs must be at least 1, got 0" in problems
    assert any(p.startswith("--model: unknown model 'bartt'; did you mean 'bart'?") for p in problems)
    assert any(p.startswith("--metrics: unknown metric 'bleuu'; did you mean 'bleu'?") for p in problems)
    assert "--generation_kwargs: 'num_beams' must be at least 1, got 0" in problems
    assert any(p.startswith("--decoding_precision=int8 sets CTranslate2's precision") for p in problems)
    assert len(problems) == 6, problems


def test_the_config_package_alone_reports_only_its_own_problems(data: Path):
    """load_config (textbox.config) knows no model: an unknown one passes there and is caught by the checks."""
    config = load_config([f"--data_path={data}", "--model=bartt"])
    assert config.model == "bartt"
    with pytest.raises(ConfigError, match="unknown model 'bartt'"):
        check_config(config)


def test_a_config_made_elsewhere_is_checked_before_the_run_writes_anything(tmp_path: Path, data: Path):
    from textbox.pipeline import run

    values = {**DEFAULTS, "data_path": str(data), "model": "bart", "saved_dir": str(tmp_path / "saved"),
              "epochs": 0, "tracker": "none"}
    with pytest.raises(ConfigError) as caught:
        run(Config(values, {"model": "made.yaml", "epochs": "made.yaml"}))
    assert caught.value.problems == [
        "epochs (from made.yaml) must be at least 1, got 0",
        "model (from made.yaml): model 'bart' needs --model_path=<hub id or local directory>"]
    assert not (tmp_path / "saved").exists()
    with pytest.raises(ConfigError, match="unknown key 'epochz'"):
        check_config(Config({**values, "epochz": 1}))



def test_a_command_line_run_checks_its_config_once(data: Path, monkeypatch):
    """run_cli checks the config, then pipeline.run (here a runner that calls check_config as it does) must not
    check it again; a config changed afterwards (replace) is checked anew."""
    import textbox.checks as checks
    from textbox.cli import run_cli

    calls = []
    original = checks.registry_problems
    monkeypatch.setattr(checks, "registry_problems", lambda config: calls.append(1) or original(config))
    seen = []
    assert run_cli([f"--data_path={data}"], runner=lambda config: seen.append(config) or check_config(config)) == 0
    assert len(calls) == 1 and seen[0].checked
    check_config(seen[0].replace(epochs=2))
    assert len(calls) == 2


def test_a_command_line_and_a_config_made_elsewhere_get_types_then_cross_key_rules_alike(data: Path):
    """Both doors run textbox.config.validate.typed_then_semantics: a mistyped key is reported once, and the
    cross-key rules still run (on its default), so that one error lists both."""
    with pytest.raises(ConfigError) as from_argv:
        load_checked_config([f"--data_path={data}", "--epochs=abc", "--train_batch_size=0"])
    assert from_argv.value.problems == ["--epochs expects int, got str 'abc'",
                                        "--train_batch_size must be at least 1, got 0"]
    values = {**DEFAULTS, "data_path": str(data), "epochs": "abc", "train_batch_size": 0}
    with pytest.raises(ConfigError) as made_elsewhere:
        check_config(Config(values, {"epochs": "made.yaml", "train_batch_size": "made.yaml"}))
    assert made_elsewhere.value.problems == ["epochs (from made.yaml) expects int, got str 'abc'",
                                             "train_batch_size (from made.yaml) must be at least 1, got 0"]
