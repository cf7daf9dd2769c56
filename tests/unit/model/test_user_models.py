"""textbox.register_model's checks, and the keys a registered family declares it honours (the others refused
before anything is built); the example family end to end is tests/integration/test_user_model.py."""
from __future__ import annotations

import pytest

from tests.helpers import TINY_MODEL_ARGS, run_in_process


@pytest.fixture
def registry():
    """The process-wide tables restored after each test."""
    from textbox.config.families import FAMILIES
    from textbox.model import user_models

    families, builders = dict(FAMILIES), dict(user_models._BUILDERS)
    yield user_models
    FAMILIES.clear()
    FAMILIES.update(families)
    user_models._BUILDERS.clear()
    user_models._BUILDERS.update(builders)


def build(config, train_split):
    raise AssertionError("not built: these tests only check")


@pytest.mark.parametrize("name, kwargs, message", [
    ("Mine", {"kind": "transformer"}, "the name must be lowercase letters, digits, _ and -"),
    ("bart", {"kind": "seq2seq"}, "'bart' is a built-in model name (--model=bart); choose another name"),
    ("unilm", {"kind": "seq2seq"}, "'unilm' is a built-in model name"),
    ("mine", {"kind": "decoder"}, "unknown kind 'decoder'; kinds: transformer, seq2seq"),
    ("mine", {"kind": "transformer", "honours": ["config_kwargs", "dropout"]},
     "honours names 'dropout', not keys of docs/model_keys.md's table"),
])
def test_a_bad_registration_is_one_sentence(registry, name, kwargs, message):
    from textbox.config.families import FAMILIES

    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        registry.register_model(name, build, **kwargs)
    assert "mine" not in FAMILIES and registry.registered_builder(name) is None


def test_a_registered_family_is_its_kind_and_its_builder_is_the_one_built(registry):
    import textbox
    from textbox.config.families import family, is_decoder_only
    from textbox.model.build import get_builder
    from textbox.model.built_model import BuiltModel

    textbox.register_model("my-lm", build, kind="causal_lm")
    assert is_decoder_only("MY-LM") and family("my-lm").needs_model_path and family("my-lm").registered
    assert get_builder("My-LM") is build and textbox.BuiltModel is BuiltModel


def test_keys_outside_what_it_declares_are_refused_before_the_run(registry):
    from textbox.checks import load_checked_config
    from textbox.config import ConfigError

    registry.register_model("mine", build, kind="transformer", honours=["config_kwargs", "tokenizer_kwargs"])
    args = [arg.replace("--model=transformer", "--model=mine") for arg in TINY_MODEL_ARGS]
    assert load_checked_config(args)["model"] == "mine"  # what it honours is checked as its kind's
    with pytest.raises(ConfigError) as caught:
        load_checked_config([*args, "--label_smoothing=0.2", "--gradient_checkpointing=True"])
    assert sorted(caught.value.problems) == [
        f"--{key} is not honoured by --model=mine's builder (registered by --user_dir, which declares the keys it "
        f"honours: docs/extending.md): drop it [--model=mine, new model]"
        for key in ("gradient_checkpointing", "label_smoothing")]


def test_a_user_dir_registering_a_built_in_name_is_one_error_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "clash.py").write_text("import textbox\n\ntextbox.register_model('bart', print, kind='seq2seq')\n")
    assert run_in_process(["--user_dir=clash.py"], tmp_path) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --user_dir=clash.py: importing it raised ValueError: "
                                                   "register_model: 'bart' is a built-in model name"), lines
