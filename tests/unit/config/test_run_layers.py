"""A run's own config.yaml as a layer: resuming it (--resume=True or --model_path=<run dir>), and testing one of
its checkpoints; a rerun from config.yaml is a new run."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from textbox.config import ConfigError, load_config


def write_run(directory: Path, *args: str) -> Path:
    """A run directory as a run leaves it: config.yaml (as pipeline.run writes it), checkpoint_last/ and a
    checkpoint_best/ holding the BART config.json of a transformer run."""
    (directory / "checkpoint_last").mkdir(parents=True)
    (directory / "checkpoint_best").mkdir()
    (directory / "checkpoint_best" / "config.json").write_text(json.dumps({"model_type": "bart",
                                                                           "is_encoder_decoder": True}))
    (directory / "config.yaml").write_text(load_config(list(args)).to_yaml())
    return directory


def test_config_yaml_records_no_run_identity_so_a_rerun_is_a_new_run(tmp_path, data_dir):
    config = load_config([f"--data_path={data_dir}", "--filename=first", "--epochs=3"])
    saved = tmp_path / "config.yaml"
    saved.write_text(config.to_yaml())
    stored = yaml.safe_load(saved.read_text())
    assert stored["filename"] is None and stored["resume"] is False and stored["epochs"] == 3
    again = load_config([f"--config_files={saved}"])
    assert again.filename is None and not again.resume
    same = {key for key in config if key not in ("filename", "config_files")}
    assert {key: again[key] for key in same} == {key: config[key] for key in same}


def test_a_bare_resume_takes_the_runs_config_as_its_base(tmp_path, data_dir):
    run = write_run(tmp_path / "saved" / "first", f"--data_path={data_dir}", "--learning_rate=0.003", "--epochs=3",
                    "--tgt_len=40", "--filename=first")
    config = load_config(["--resume=True", "--filename=first", f"--saved_dir={tmp_path / 'saved'}", "--epochs=5"])
    assert (config.learning_rate, config.tgt_len, config.dataset) == (0.003, 40, "toy")
    assert config.source_of("learning_rate") == str(run / "config.yaml")
    assert config.epochs == 5 and config.resume
    assert any("resuming" in note for note in config.notes)


def test_a_resume_that_changes_the_model_data_or_optimiser_is_refused(tmp_path, data_dir):
    write_run(tmp_path / "saved" / "first", f"--data_path={data_dir}", "--learning_rate=0.003")
    with pytest.raises(ConfigError) as caught:
        load_config(["--resume=True", "--filename=first", f"--saved_dir={tmp_path / 'saved'}",
                     "--learning_rate=0.01", "--tgt_len=7", "--learning_rate=0.01"])
    text = str(caught.value)
    assert "--learning_rate=0.01 differs from 0.003 in the run being resumed" in text
    assert "--tgt_len=7 differs from" in text
    # the same values as the run's are fine (the command that started it, plus --resume=True)
    load_config(["--resume=True", "--filename=first", f"--saved_dir={tmp_path / 'saved'}", "--learning_rate=0.003",
                 f"--data_path={data_dir}"])


def test_a_resume_may_change_how_figures_are_scored_only_while_the_loss_chooses_the_best_model(tmp_path, data_dir):
    """The best score a run saved keeps the definition it was scored with: a resumed run that rescored it another
    way would keep a checkpoint the uninterrupted run would not."""
    saved = tmp_path / "saved"
    write_run(saved / "by_bleu", f"--data_path={data_dir}", "--metrics=['bleu']", "--metrics_for_best_model=['bleu-4']")
    with pytest.raises(ConfigError) as caught:
        load_config(["--resume=True", "--filename=by_bleu", f"--saved_dir={saved}", "--bleu_max_ngrams=1",
                     "--lower_evaluation=True"])
    text = str(caught.value)
    assert "--bleu_max_ngrams=1 differs from 4 in the run being resumed" in text and "changes how bleu-4" in text
    assert "--lower_evaluation=True differs from False" in text
    write_run(saved / "by_loss", f"--data_path={data_dir}", "--metrics=['bleu']")
    config = load_config(["--resume=True", "--filename=by_loss", f"--saved_dir={saved}", "--bleu_max_ngrams=1",
                          "--rouge_sentence_split=period"])
    assert config.bleu_max_ngrams == 1 and config.rouge_sentence_split == "period"


def test_resuming_a_missing_run_is_reported_before_anything_runs(tmp_path):
    with pytest.raises(ConfigError, match="--resume=True: run directory .*nope does not exist"):
        load_config(["--resume=True", "--filename=nope", f"--saved_dir={tmp_path}"])
    (tmp_path / "bare").mkdir()
    with pytest.raises(ConfigError, match="bare has no config.yaml"):
        load_config(["--resume=True", "--filename=bare", f"--saved_dir={tmp_path}"])


def test_model_path_to_a_run_directory_continues_that_run(tmp_path, data_dir):
    run = write_run(tmp_path / "saved" / "first", f"--data_path={data_dir}", "--learning_rate=0.003", "--epochs=3")
    config = load_config([f"--model_path={run}", "--epochs=5"])
    assert (config.resume, config.saved_dir, config.filename) == (True, str(tmp_path / "saved"), "first")
    assert config.model_path is None  # the run's own: its model is rebuilt, then checkpoint_last restores it
    assert config.learning_rate == 0.003 and config.source_of("learning_rate") == str(run / "config.yaml")
    assert config.epochs == 5


def test_model_path_to_a_run_directory_without_training_or_checkpoint_last_says_what_to_give(tmp_path, data_dir):
    run = write_run(tmp_path / "run", f"--data_path={data_dir}")
    best = run / "checkpoint_best"
    with pytest.raises(ConfigError, match=f"is a run directory: to test .* give --model_path={best}"):
        load_config([f"--model_path={run}", "--do_train=False"])
    shutil.rmtree(run / "checkpoint_last")
    with pytest.raises(ConfigError, match="needs checkpoint_last/ \\(this one has none\\)"):
        load_config([f"--model_path={run}"])


def test_testing_a_run_checkpoint_follows_the_runs_settings(tmp_path, data_dir):
    run = write_run(tmp_path / "run", f"--data_path={data_dir}", "--tgt_len=40", "--src_len=50",
                    "--generation_kwargs={'num_beams': 3}", "--prefix_prompt=summarize: ", "--learning_rate=0.5")
    testing = load_config([f"--model_path={run / 'checkpoint_best'}", "--do_train=False", f"--data_path={data_dir}",
                           "--src_len=60"])
    assert (testing.model, testing.tgt_len, testing.src_len) == ("transformer", 40, 60)
    assert testing.generation_kwargs == {"num_beams": 3} and testing.prefix_prompt == "summarize: "
    assert testing.source_of("tgt_len") == str(run / "config.yaml")
    assert testing.source_of("model") == f"run config {run / 'config.yaml'}"
    assert testing.learning_rate != 0.5  # training settings are this command's own
    assert any("is a checkpoint of the run" in note and "tgt_len=40" in note for note in testing.notes)
    training = load_config([f"--model_path={run / 'checkpoint_best'}", f"--data_path={data_dir}"])
    assert training.model == "transformer" and training.tgt_len != 40  # fine-tuning: the family only


def test_an_explicit_model_must_fit_a_run_checkpoint_architecture(tmp_path, data_dir):
    run = write_run(tmp_path / "run", f"--data_path={data_dir}")
    assert load_config([f"--model_path={run / 'checkpoint_best'}", "--model=bart", f"--data_path={data_dir}"]).model \
        == "bart"  # a transformer run saves a BART
    with pytest.raises(ConfigError, match="--model=gpt2 contradicts --model_path=.*checkpoint_best: run config "
                                          ".*says it is transformer \\(a bart architecture\\)"):
        load_config([f"--model_path={run / 'checkpoint_best'}", "--model=gpt2", f"--data_path={data_dir}"])


def test_the_checkpoint_names_match_the_trainers():
    from textbox.config.run_config import LAST_CHECKPOINT, RUN_CONFIG
    from textbox.pipeline import run_dir
    from textbox.trainer import checkpoint

    assert LAST_CHECKPOINT == checkpoint.LAST and RUN_CONFIG == run_dir.CONFIG_FILE


def test_a_resumed_run_rewrites_config_yaml_only_when_it_changed(tmp_path, data_dir):
    from textbox.pipeline.run_dir import write_run_config

    run = write_run(tmp_path / "saved" / "first", f"--data_path={data_dir}", "--epochs=3")
    before = (run / "config.yaml").stat().st_mtime_ns, (run / "config.yaml").read_bytes()
    bare = load_config(["--resume=True", "--filename=first", f"--saved_dir={tmp_path / 'saved'}"])
    write_run_config(bare, run)
    assert ((run / "config.yaml").stat().st_mtime_ns, (run / "config.yaml").read_bytes()) == before
    longer = load_config(["--resume=True", "--filename=first", f"--saved_dir={tmp_path / 'saved'}", "--epochs=5"])
    write_run_config(longer, run)
    assert yaml.safe_load((run / "config.yaml").read_text())["epochs"] == 5


def test_generation_kwargs_given_when_testing_a_checkpoint_replace_the_runs_whole(tmp_path, data_dir):
    """The run decoded with no_repeat_ngram_size=2; a test command that gives its own generation_kwargs decodes
    with exactly those (they used to merge key by key, adding the run's no_repeat_ngram_size unasked)."""
    run = write_run(tmp_path / "run", f"--data_path={data_dir}", "--generation_kwargs={'no_repeat_ngram_size': 2}")
    testing = load_config([f"--model_path={run / 'checkpoint_best'}", "--do_train=False",
                           "--generation_kwargs={'num_beams': 2, 'early_stopping': True}"])
    assert testing.generation_kwargs == {"num_beams": 2, "early_stopping": True}
    assert testing.source_of("generation_kwargs") == "command line"
    assert any("replaces the tested run's generation_kwargs" in note for note in testing.notes)
    unchanged = load_config([f"--model_path={run / 'checkpoint_best'}", "--do_train=False"])
    assert unchanged.generation_kwargs == {"no_repeat_ngram_size": 2}  # not given: the run's own apply


def test_merged_dicts_name_the_layer_of_each_entry(tmp_path):
    from textbox.pipeline.run_dir import config_summary

    config = load_config(["--config_kwargs={'d_model': 64}"])
    assert config.entry_sources("config_kwargs")["d_model"] == "command line"
    assert config.entry_sources("config_kwargs")["encoder_layers"].endswith("transformer.yaml")
    line = next(line for line in config_summary(config).splitlines() if line.startswith("  config_kwargs ="))
    assert "d_model: command line" in line and "encoder_layers" in line and "transformer.yaml" in line


def test_a_checkpoint_is_tested_on_its_runs_data_unless_the_command_names_other_data(tmp_path, data_dir):
    """TextBox's partial experiment (--model_path=<run>/checkpoint_best --do_train=False --do_valid=False, no
    --dataset) tested a checkpoint trained on other data on the built-in pydoc set without a word."""
    run = write_run(tmp_path / "run", f"--data_path={data_dir}", "--data_format=plain")
    testing = load_config([f"--model_path={run / 'checkpoint_best'}", "--do_train=False", "--do_valid=False"])
    assert (testing.dataset, testing.data_path, testing.data_format) == ("toy", str(data_dir), "plain")
    assert any("tested on that run's data (dataset='toy')" in note for note in testing.notes)
    other = tmp_path / "other"
    shutil.copytree(data_dir, other)
    elsewhere = load_config([f"--model_path={run / 'checkpoint_best'}", "--do_train=False", f"--data_path={other}"])
    assert (elsewhere.dataset, elsewhere.data_path) == ("other", str(other))
    named = load_config([f"--model_path={run / 'checkpoint_best'}", "--do_train=False", "--dataset=pydoc"])
    assert (named.dataset, named.data_path) == ("pydoc", None)
