"""The config contract: layers, literal values, one report of every problem, reproducible config.yaml."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT_ROOT
from tests.helpers import missing_nltk_data
from textbox.cli import run_cli
from textbox.checks import load_checked_config
from textbox.config import ConfigError
from textbox.config.argv import parse_argv, parse_value
from textbox.config.schema import SCHEMA


def test_values_are_python_literals_and_strings_stay_strings():
    assert parse_value("['bleu','rouge']") == ["bleu", "rouge"]
    assert parse_value("{'num_beams':4}") == {"num_beams": 4}
    assert parse_value("3e-4") == 3e-4
    assert parse_value("BART") == "BART"
    assert parse_value("__import__('os').system('echo hi')") == "__import__('os').system('echo hi')"


def test_parse_argv_accepts_both_forms_and_bare_flags():
    values, problems = parse_argv(["--epochs=3", "--model", "bart", "--do_train", "--seed=1", "stray"])
    assert values == {"epochs": 3, "model": "bart", "do_train": True, "seed": 1}
    assert problems == ["argument 'stray' is not of the form --key=value"]


def test_a_number_typed_for_a_text_key_is_its_text(data_dir: Path):
    """--filename=42 names the run directory "42" (was: '--filename expects str|None, got int 42')."""
    values, _ = parse_argv(["--filename=42", "--hub_subset=1e3", "--epochs=42", "--learning_rate=1", "--filename2=7"])
    assert values == {"filename": "42", "hub_subset": "1e3", "epochs": 42, "learning_rate": 1, "filename2": 7}
    assert load_checked_config(["--filename=42", f"--data_path={data_dir}"]).filename == "42"


def test_layers_later_wins(tmp_path: Path, data_dir: Path):
    configs = tmp_path / "configs"
    (configs / "model").mkdir(parents=True)
    (configs / "dataset").mkdir()
    (configs / "overall.yaml").write_text("epochs: 1\ntrain_batch_size: 2\neval_batch_size: 3\nseed: 4\nsrc_len: 5\n")
    (configs / "model" / "transformer.yaml").write_text(
        "train_batch_size: 20\neval_batch_size: 30\nseed: 40\nsrc_len: 50\n")
    (configs / "dataset" / "toy.yaml").write_text("eval_batch_size: 300\nseed: 400\nsrc_len: 500\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text("seed: 4000\nsrc_len: 5000\n")
    config = load_checked_config(["--dataset=toy", f"--data_path={data_dir}", f"--config_files={extra}", "--src_len=7"],
                                 config_dir=configs)
    assert (config.epochs, config.train_batch_size, config.eval_batch_size, config.seed, config.src_len) == \
        (1, 20, 300, 4000, 7)
    assert config.source_of("seed") == str(extra)
    assert config.source_of("src_len") == "command line"


def test_every_problem_is_reported_at_once_with_suggestions(data_dir: Path):
    with pytest.raises(ConfigError) as caught:
        load_checked_config(["--lerning_rate=0.1", "--epochs=two", "--train_batch_size=True", "--truncate=middle",
                             f"--data_path={data_dir}"])
    problems = caught.value.problems
    assert len(problems) == 4, problems
    assert "unknown key --lerning_rate; did you mean 'learning_rate'?" in problems[0]
    assert any("--epochs expects int, got str 'two'" in p for p in problems)
    assert any("--train_batch_size expects int, got bool True" in p for p in problems)
    assert any("--truncate must be one of 'tail', 'head'" in p for p in problems)


def test_semantic_problems_name_the_key(tmp_path: Path, data_dir: Path):
    with pytest.raises(ConfigError) as caught:
        load_checked_config(["--model=bartt", "--dataset=nope", "--metrics=['bleuu']", "--epochs=0"])
    text = str(caught.value)
    assert "--epochs must be at least 1" in text
    assert "unknown model 'bartt'; did you mean 'bart'?" in text
    assert "--dataset: dataset directory dataset/nope does not exist" in text
    assert "unknown metric 'bleuu'; did you mean 'bleu'?" in text


def test_best_model_metric_must_be_produced(data_dir: Path):
    with pytest.raises(ConfigError, match="'rouge-9' is not produced by metrics"):
        load_checked_config([f"--data_path={data_dir}", "--metrics=['rouge']", "--metrics_for_best_model=['rouge-9']"])
    config = load_checked_config([f"--data_path={data_dir}", "--metrics=['rouge']",
                                  "--metrics_for_best_model=['ROUGE-1','loss']"])
    assert config.metrics_for_best_model == ["ROUGE-1", "loss"]


def test_model_needs_path_and_local_path_must_exist(data_dir: Path):
    with pytest.raises(ConfigError) as caught:
        load_checked_config([f"--data_path={data_dir}", "--model=bart"])
    assert "needs --model_path" in str(caught.value)
    with pytest.raises(ConfigError, match="--model_path: directory ./missing_model does not exist"):
        load_checked_config([f"--data_path={data_dir}", "--model=bart", "--model_path=./missing_model"])


def test_an_output_file_that_cannot_be_written_is_refused_before_anything_is_built(tmp_path: Path, data_dir: Path):
    """--output_file is written after every input is decoded: a path under a regular file, a directory or a
    read-only directory is refused while the config loads, naming the key."""
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("red cat\n")
    plain = tmp_path / "plain.txt"
    plain.write_text("a regular file\n")
    common = [f"--data_path={data_dir}", f"--input_file={inputs}", "--do_train=False"]
    for output, message in ((plain / "x", f"--output_file: cannot write {plain / 'x'}: {plain} is a file, not a "
                                          f"directory"),
                            (plain / "deeper" / "x", f"{plain} is a file, not a directory"),
                            (tmp_path, f"--output_file: {tmp_path} is a directory; name a file")):
        with pytest.raises(ConfigError) as caught:
            load_checked_config([*common, f"--output_file={output}"])
        assert message in str(caught.value), str(caught.value)
    load_checked_config([*common, f"--output_file={tmp_path / 'new' / 'out.txt'}"])  # a directory made on writing
    load_checked_config([*common, "--output_file=-"])


def test_saved_config_reproduces_the_run(tmp_path: Path, data_dir: Path):
    first = load_checked_config([f"--data_path={data_dir}", "--epochs=3", "--generation_kwargs={'num_beams': 2}",
                                 "--metrics=['bleu']", "--metrics_for_best_model=['bleu']"])
    saved = tmp_path / "config.yaml"
    saved.write_text(first.to_yaml())
    again = load_checked_config([f"--config_files={saved}"])
    assert {**again.to_dict(), "config_files": []} == {**first.to_dict(), "config_files": []}


def test_bad_yaml_names_file_and_line(tmp_path: Path, data_dir: Path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("epochs: 1\nseed: [1, 2\n")
    with pytest.raises(ConfigError, match=r"broken.yaml line \d+: not valid yaml"):
        load_checked_config([f"--data_path={data_dir}", f"--config_files={broken}"])
    with pytest.raises(ConfigError, match="config file .*absent.yaml does not exist"):
        load_checked_config([f"--data_path={data_dir}", f"--config_files={tmp_path / 'absent.yaml'}"])


def test_cli_exit_code_2_and_nothing_written(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ran = []
    code = run_cli(["--epochz=1", "--dataset=missing"], runner=ran.append)
    assert code == 2 and not ran
    err = capsys.readouterr().err
    assert "2 configuration problems" in err and "did you mean 'epochs'" in err
    assert "Traceback" not in err
    assert not (tmp_path / "saved").exists()


def test_help_lists_every_key(capsys):
    """(That --help imports no torch: tests/unit/test_light_imports.py.)"""
    import run_textbox

    assert run_textbox.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in SCHEMA:
        assert f"--{name}:" in out


# configs/accelerate/ holds accelerate's launcher files, checked by tests/unit/config/test_launcher.py
@pytest.mark.parametrize("path", sorted(path for path in (PROJECT_ROOT / "configs").rglob("*.yaml")
                                        if "accelerate" not in path.parent.name), ids=lambda p: p.name)
def test_every_shipped_yaml_is_valid(path: Path):
    content = yaml.safe_load(path.read_text()) or {}
    assert isinstance(content, dict)
    unknown = set(content) - set(SCHEMA)
    assert not unknown, f"{path}: unknown keys {unknown}"
    for key, value in content.items():
        assert SCHEMA[key].type_error(value) is None, f"{path}: {key}={value!r}"


@pytest.mark.parametrize("model", sorted(p.stem for p in (PROJECT_ROOT / "configs" / "model").glob("*.yaml")))
def test_every_model_yaml_loads_through_the_full_validation(model: str, data_dir: Path, tmp_path: Path):
    config = load_checked_config([f"--model={model}", f"--model_path={tmp_path}", f"--data_path={data_dir}"])
    assert config.model == model


@pytest.mark.parametrize("dataset", sorted(p.stem for p in (PROJECT_ROOT / "configs" / "dataset").glob("*.yaml")))
def test_every_dataset_yaml_loads_through_the_full_validation(dataset: str, data_dir: Path):
    try:
        config = load_checked_config([f"--dataset={dataset}", f"--data_path={data_dir}"])
    except ConfigError as error:  # catalogue entries may need NLTK data this machine lacks
        assert all(missing_nltk_data(problem) for problem in error.problems), error.problems
        return
    assert config.dataset == dataset


def test_dict_keys_merge_key_by_key_across_layers(data_dir: Path):
    """--config_kwargs={'encoder_layers': 1} changes one size and keeps the rest of the model yaml's."""
    config = load_checked_config([f"--data_path={data_dir}", "--config_kwargs={'encoder_layers': 1}"])
    shipped = yaml.safe_load((PROJECT_ROOT / "configs" / "model" / "transformer.yaml").read_text())["config_kwargs"]
    assert config.config_kwargs == {**shipped, "encoder_layers": 1}


def test_config_pickles_for_worker_processes(data_dir: Path):
    import pickle

    config = load_checked_config([f"--data_path={data_dir}", "--epochs=3"])
    again = pickle.loads(pickle.dumps(config))
    assert again == config and again.epochs == 3 and again.source_of("epochs") == "command line"


def test_help_prints_each_section_once_with_all_its_keys(capsys):
    assert run_cli(["--help"]) == 0
    out = capsys.readouterr().out
    sections = re.findall(r"^\[(\w+)\]$", out, flags=re.MULTILINE)
    assert sorted(sections) == sorted({key.group for key in SCHEMA.values()})  # each group, once
    for part in re.split(r"^\[\w+\]$", out, flags=re.MULTILINE)[1:]:
        group = sections.pop(0)
        listed = re.findall(r"^  --(\w+):", part, flags=re.MULTILINE)
        assert listed == [name for name, key in SCHEMA.items() if key.group == group]


def test_a_per_model_section_applies_to_its_model_alone(data_dir: Path, tmp_path: Path):
    """pydoc_keywords.yaml's dropout is the transformer's: the embedded default keeps it, and GPT-2 on that dataset
    is no longer handed it (its builder refused: "dropout is not a setting of a 'gpt2' model config")."""
    from transformers import GPT2Config

    from textbox.model.loading import load_config

    default = load_checked_config(["--dataset=pydoc_keywords", f"--data_path={data_dir}"])
    assert default.config_kwargs["dropout"] == 0.0
    assert default.entry_sources("config_kwargs")["dropout"].endswith("configs/dataset/pydoc_keywords.yaml")
    GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=64, n_positions=64).save_pretrained(tmp_path / "gpt2")
    gpt2 = load_checked_config(["--model=gpt2", f"--model_path={tmp_path / 'gpt2'}", "--from_scratch=True",
                                "--dataset=pydoc_keywords", f"--data_path={data_dir}"])
    assert gpt2.config_kwargs == {} and gpt2.learning_rate == 0.002  # the dataset's other settings still apply
    assert load_config(str(tmp_path / "gpt2"), gpt2.config_kwargs).model_type == "gpt2"  # where it was refused


def test_per_model_sections_are_checked_and_count_as_their_file(data_dir: Path, tmp_path: Path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("per_model:\n  Transformer: {src_len: 12}\n  gru: {src_len: 99}\n")
    config = load_checked_config([f"--config_files={mine}", f"--data_path={data_dir}"])
    assert config.src_len == 12 and config.source_of("src_len") == str(mine) and config.typed("src_len")
    mine.write_text("per_model:\n  transformr: {epochs: 1}\n  bart: {model: t5, epochs: 1}\n")
    with pytest.raises(ConfigError) as caught:
        load_checked_config([f"--config_files={mine}", f"--data_path={data_dir}"])
    assert any("unknown model 'transformr'; did you mean 'transformer'" in problem for problem in caught.value.problems)
    assert any("the 'bart' section sets model" in problem for problem in caught.value.problems)


def test_other_tools_names_are_answered_with_ours(data_dir: Path):
    """HF Seq2SeqTrainer and fairseq names typed by habit: the suggestion is our key, not the nearest spelling."""
    with pytest.raises(ConfigError) as caught:
        load_checked_config([f"--data_path={data_dir}", "--lr=0.1", "--num_train_epochs=2", "--output_dir=x",
                             "--per_device_train_batch_size=3", "--max_update=9"])
    hints = [p.split("did you mean ")[1].split("?")[0] for p in caught.value.problems]
    assert hints == ["'learning_rate'", "'epochs'", "'saved_dir' (with filename: the run directory is "
                     "saved_dir/filename)", "'train_batch_size'", "'max_steps'"]


def test_a_best_model_figure_spelled_as_other_tools_do_is_answered_with_ours(data_dir: Path):
    with pytest.raises(ConfigError) as caught:
        load_checked_config([f"--data_path={data_dir}", "--metrics=['bleu','rouge']",
                             "--metrics_for_best_model=['rougeL','sacrebleu','rouge_1']"])
    hints = [p.split("did you mean ")[1].split("?")[0] for p in caught.value.problems]
    assert hints == ["'rouge-l'", "'bleu'", "'rouge-1'"]


@pytest.mark.parametrize("setting, problem", [
    ("--num_proc=0", "--num_proc must be at least 1 (or None), got 0"),
    ("--tokenizer_train_sample=-5", "--tokenizer_train_sample must be at least 1 (or None), got -5")])
def test_a_process_count_or_tokenizer_sample_below_one_is_one_problem(data_dir: Path, setting: str, problem: str):
    with pytest.raises(ConfigError) as caught:
        load_checked_config([setting, f"--data_path={data_dir}"])
    assert caught.value.problems == [problem]
