"""What load_config decides for the user: the model family from --model_path, the dataset name from --data_path,
which warm-up setting wins, and how to quote a value the shell unquoted."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT_ROOT
from textbox.config import ConfigError, load_config

MODEL_YAMLS = PROJECT_ROOT / "configs" / "model"


def checkpoint(directory: Path, **fields) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(fields))
    return directory


@pytest.mark.parametrize("fields, family", [
    ({"model_type": "bart", "is_encoder_decoder": True}, "bart"),
    ({"model_type": "t5", "is_encoder_decoder": True}, "t5"),
    ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}, "gpt2"),
    ({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]}, "causal_lm"),
    ({"model_type": "bert", "architectures": ["BertForMaskedLM"]}, "bert2bert"),
])
def test_the_family_yaml_applies_as_if_model_had_been_given(tmp_path, data_dir, fields, family):
    path = checkpoint(tmp_path / "ckpt", **fields)
    config = load_config([f"--model_path={path}", f"--data_path={data_dir}"])
    explicit = load_config([f"--model={family}", f"--model_path={path}", f"--data_path={data_dir}"])
    assert config.model == family
    assert config.source_of("model") == f"checkpoint {path / 'config.json'}"
    shipped = yaml.safe_load((MODEL_YAMLS / f"{family}.yaml").read_text())
    assert {key: config[key] for key in shipped} == shipped
    assert config.source_of("learning_rate") == str(MODEL_YAMLS / f"{family}.yaml")
    assert {**config, "model": None} == {**explicit, "model": None}
    assert any(f"model family '{family}' chosen from checkpoint {path / 'config.json'}" in n for n in config.notes)


def test_a_contradicting_model_names_both_and_generic_families_accept_their_kind(tmp_path, data_dir):
    path = checkpoint(tmp_path / "bart", model_type="bart", is_encoder_decoder=True)
    with pytest.raises(ConfigError) as caught:
        load_config(["--model=t5", f"--model_path={path}", f"--data_path={data_dir}"])
    assert f"--model=t5 contradicts --model_path={path}: checkpoint {path / 'config.json'} says it is bart; " \
           f"drop --model to use the checkpoint's family, or give --model=bart" in str(caught.value)
    for model in ("seq2seq", "transformer", "bart"):
        assert load_config([f"--model={model}", f"--model_path={path}", f"--data_path={data_dir}"]).model == model
    with pytest.raises(ConfigError, match="--model=causal_lm contradicts"):
        load_config(["--model=causal_lm", f"--model_path={path}", f"--data_path={data_dir}"])


def test_a_model_set_in_a_config_file_counts_as_given(tmp_path, data_dir):
    path = checkpoint(tmp_path / "gpt", model_type="gpt2")
    extra = tmp_path / "mine.yaml"
    extra.write_text("model: t5\n")
    with pytest.raises(ConfigError, match=f"model \\(from {extra}\\)=t5 contradicts"):
        load_config([f"--config_files={extra}", f"--model_path={path}", f"--data_path={data_dir}"])


def test_an_unreadable_family_without_model_is_one_clear_problem(tmp_path, data_dir):
    with pytest.raises(ConfigError, match="holds no config.json.*--model=<name>"):
        load_config([f"--model_path={tmp_path}", f"--data_path={data_dir}"])
    assert load_config([f"--model_path={tmp_path}", "--model=bart", f"--data_path={data_dir}"]).model == "bart"


def test_data_path_alone_names_the_dataset_and_its_yaml_applies(tmp_path, data_dir):
    configs = tmp_path / "configs"
    (configs / "dataset").mkdir(parents=True)
    (configs / "model").mkdir()
    (configs / "dataset" / "toy.yaml").write_text("tgt_len: 33\n")
    (configs / "dataset" / "pydoc.yaml").write_text("tgt_len: 24\nepochs: 6\n")
    config = load_config([f"--data_path={data_dir}/"], config_dir=configs)
    assert (config.dataset, config.tgt_len, config.epochs) == ("toy", 33, 10)
    assert config.source_of("tgt_len") == str(configs / "dataset" / "toy.yaml")
    assert any("dataset name 'toy' from --data_path" in note for note in config.notes)
    named = load_config([f"--data_path={data_dir}", "--dataset=pydoc"], config_dir=configs)
    assert (named.dataset, named.tgt_len) == ("pydoc", 24)  # both given: --dataset names the yaml


@pytest.mark.parametrize("args, steps, ratio", [
    (["--warmup_ratio=0.1"], 0, 0.1),  # the command line over transformer.yaml's warmup_steps: 200
    (["--warmup_steps=7"], 7, 0.0),
    ([], 200, 0.0),
])
def test_the_later_layers_warmup_setting_wins(data_dir, args, steps, ratio):
    config = load_config([f"--data_path={data_dir}", *args])
    assert (config.warmup_steps, config.warmup_ratio) == (steps, ratio)
    if args == ["--warmup_ratio=0.1"]:
        assert any("warm-up: warmup_ratio=0.1 (from the command line) replaces warmup_steps=200" in note
                   for note in config.notes)


def test_a_config_file_warmup_steps_wins_over_a_model_yaml_warmup_ratio(tmp_path, data_dir):
    extra = tmp_path / "mine.yaml"
    extra.write_text("warmup_steps: 30\n")
    path = checkpoint(tmp_path / "bart", model_type="bart")
    config = load_config([f"--model_path={path}", f"--config_files={extra}", f"--data_path={data_dir}"])
    assert (config.warmup_steps, config.warmup_ratio) == (30, 0.0)


def test_both_warmups_in_one_layer_is_an_error(tmp_path, data_dir):
    with pytest.raises(ConfigError, match="warmup_steps=5 and warmup_ratio=0.1 are both set in the command line"):
        load_config([f"--data_path={data_dir}", "--warmup_steps=5", "--warmup_ratio=0.1"])
    extra = tmp_path / "both.yaml"
    extra.write_text("warmup_steps: 5\nwarmup_ratio: 0.2\n")
    with pytest.raises(ConfigError, match=f"both set in {extra}"):
        load_config([f"--data_path={data_dir}", f"--config_files={extra}"])


@pytest.mark.parametrize("arg, hint", [
    ("--metrics=[bleu,rouge]", "write --metrics=\"['bleu','rouge']\""),
    ("--metrics_for_best_model=[rouge-l]", "write --metrics_for_best_model=\"['rouge-l']\""),
    ("--generation_kwargs={num_beams:4}", "write --generation_kwargs=\"{'num_beams':4}\""),
    ("--generation_kwargs=max_new_tokens:5", "--generation_kwargs=\"{'max_new_tokens':5}\""),
])
def test_a_value_the_shell_unquoted_gets_a_quoting_hint(data_dir, arg, hint):
    with pytest.raises(ConfigError) as caught:
        load_config([f"--data_path={data_dir}", arg])
    assert hint in str(caught.value)


def test_the_hinted_quoting_parses():
    from textbox.config.argv import parse_value, quoting_hint

    hint = quoting_hint("metrics", "[bleu,rouge]", {"metrics": "command line"})
    suggested = hint.split('"')[1]
    assert parse_value(suggested) == ["bleu", "rouge"]
    assert quoting_hint("metrics", "[bleu,rouge]", {"metrics": "x.yaml"}) == ""  # yaml has its own quoting
    assert quoting_hint("model", "bart", {"model": "command line"}) == ""


@pytest.mark.parametrize("args, message", [
    (["--average_checkpoints=5"], "--average_checkpoints=5 averages the 5 latest checkpoint-<step>, which "
                                  "--max_save=2 does not keep: set --max_save to at least 7"),
    (["--average_checkpoints=3", "--max_save=4"], "set --max_save to at least 5"),
    (["--average_checkpoints=3", "--max_save=-1", "--do_valid=False"], "needs --do_train=True and --do_valid=True"),
    (["--average_checkpoints=0"], "--average_checkpoints must be at least 1"),
])
def test_average_checkpoints_needs_the_checkpoints_it_averages(data_dir, args, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config([f"--data_path={data_dir}", *args])
    ok = load_config([f"--data_path={data_dir}", "--average_checkpoints=5", "--max_save=7"])
    assert ok.average_checkpoints == 5
