"""TextBox 2.0's model and method names: a family row each (checked on tiny configs), or refused with what to use;
its efficient_kwargs fields become peft's, and suggestions never point at another method."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.family_helpers import BART_SIZES, CHECKPOINTS
from textbox.checks import load_checked_config
from textbox.config import ConfigError
from textbox.config.families import FAMILIES, KINDS, REFUSED_MODELS
from textbox.config.loader import resolve_config

# TextBox 2.0's --model names new here (a group's members) -> (a transformers model_type of their checkpoints, tiny
# settings): the tiny checkpoints of tests/family_helpers.py (which trains and decodes each of them end to end)
GROUPED = sorted(name for name, entry in FAMILIES.items() if entry.group and entry.kind.name != "encoder_decoder")
TINY = {name: (CHECKPOINTS[name].model_type, {**CHECKPOINTS[name].settings, "vocab_size": 64}) for name in GROUPED}


@pytest.mark.parametrize("name", sorted(TINY))
def test_textbox_model_names_load_their_checkpoints(name: str, tmp_path: Path, data_dir: Path):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    model_type, settings = TINY[name]
    config = AutoConfig.for_model(model_type, **settings)
    config.save_pretrained(tmp_path / "checkpoint")
    resolution = resolve_config([f"--model={name.upper()}", f"--model_path={tmp_path / 'checkpoint'}",
                                 f"--data_path={data_dir}"])
    assert resolution.problems == [], resolution.problems  # the checkpoint is accepted for this name
    family = FAMILIES[name]
    auto = AutoModelForCausalLM if family.kind.decoder_only else AutoModelForSeq2SeqLM
    assert auto.from_config(config).config.model_type == model_type  # the family's builder's auto class loads it
    # the family's settings come from its group's yaml (or its kind's) when it has none of its own
    group_yaml = resolve_config([f"--model={family.checkpoints}", f"--model_path={tmp_path / 'checkpoint'}",
                                 f"--data_path={data_dir}"]).config
    assert resolution.config.learning_rate == group_yaml.learning_rate
    assert family.kind is KINDS[family.kind.name]


def test_a_textbox_model_name_rejects_another_architecture(tmp_path: Path, data_dir: Path):
    from transformers import AutoConfig

    AutoConfig.for_model("bart", **BART_SIZES, vocab_size=64).save_pretrained(tmp_path / "bart")
    with pytest.raises(ConfigError) as caught:
        load_checked_config(["--model=mt5", f"--model_path={tmp_path / 'bart'}", f"--data_path={data_dir}"])
    assert any("contradicts --model_path" in problem for problem in caught.value.problems)


@pytest.mark.parametrize("name", sorted(REFUSED_MODELS))
def test_textbox_models_without_counterpart_are_refused_with_a_pointer(name: str, data_dir: Path):
    with pytest.raises(ConfigError) as caught:
        load_checked_config([f"--model={name}", "--model_path=x/y", f"--data_path={data_dir}"])
    assert any(f"TextBox 2.0's model {name!r} is not provided: {REFUSED_MODELS[name]}" in problem
               for problem in caught.value.problems), caught.value.problems


def test_textbox_efficient_kwargs_become_peft_fields_and_p_tuning_v2_is_prefix_tuning(data_dir: Path):
    resolution = resolve_config(["--efficient_methods=['lora']", "--efficient_kwargs={'lora_r': 8}",
                                 f"--data_path={data_dir}"])
    assert resolution.problems == [] and resolution.config.efficient_kwargs == {"r": 8}
    assert any("'lora_r': 8" in note and "'r': 8" in note for note in resolution.config.notes)
    resolution = resolve_config(["--efficient_methods=['p-tuning-v2']",
                                 "--efficient_kwargs={'prefix_length': 20, 'prefix_mid_dim': 64}",
                                 f"--data_path={data_dir}"])
    assert resolution.problems == []
    config = resolution.config
    assert config.efficient_methods == ["prefix-tuning"]  # not 'p-tuning', a different method
    assert config.efficient_kwargs == {"num_virtual_tokens": 20, "prefix_projection": True,
                                       "encoder_hidden_size": 64}


@pytest.mark.parametrize("argv, pointer", [
    (["--efficient_methods=['adapter']", "--efficient_kwargs={'adapter_mid_dim': 64}"], "Houlsby adapters"),
    (["--efficient_methods=['prefix-tuning']", "--efficient_kwargs={'prefix_dropout': 0.1}"], "drop prefix_dropout"),
    (["--efficient_methods=['lora']", "--efficient_kwargs={'r': 4, 'lora_r': 8}"], "keep one"),
])
def test_textbox_methods_and_fields_without_counterpart_are_refused(argv, pointer, data_dir: Path):
    with pytest.raises(ConfigError) as caught:
        load_checked_config([*argv, "--model=bart", "--model_path=facebook/bart-base", f"--data_path={data_dir}"])
    problems = caught.value.problems
    assert any(pointer in problem for problem in problems), problems
    assert not any("did you mean 'lora_dropout'" in problem or "did you mean 'p-tuning'" in problem
                   for problem in problems)


def test_the_docs_page_lists_every_model_row():
    from tests.conftest import PROJECT_ROOT
    from textbox.config.textbox2.translate import render_models

    assert render_models() in (PROJECT_ROOT / "docs" / "textbox_names.md").read_text()
