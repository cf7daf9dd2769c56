"""TextBox 2.0's own files and names: its yamls load as --config_files, its names become ours (each logged), and
what has no counterpart is refused with the right pointer. Fixtures: tests/fixtures/textbox2 (TextBox's shapes)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT
from tests.helpers import make_toy_dataset
from textbox.checks import load_checked_config
from textbox.config import ConfigError
from textbox.config.argv import parse_argv
from textbox.config.loader import resolve_config
from textbox.config.textbox2.names import TEXTBOX_NAMES
from textbox.config.textbox2.translate import render_table
from textbox.utils import yaml_numbers

TEXTBOX2 = PROJECT_ROOT / "tests" / "fixtures" / "textbox2"
OFFLINE_CPU = ["--use_gpu=False", "--wandb=disabled"]  # what a TextBox user gives on a CPU machine without wandb


def test_scientific_floats_are_numbers_in_every_yaml_layer(tmp_path: Path, data_dir: Path):
    configs = tmp_path / "configs"
    (configs / "model").mkdir(parents=True)
    (configs / "dataset").mkdir()
    (configs / "overall.yaml").write_text("learning_rate: 3e-5\nweight_decay: 1E-2\n")
    (configs / "model" / "transformer.yaml").write_text("label_smoothing: 1e-1\n")
    (configs / "dataset" / "toy.yaml").write_text("warmup_ratio: 5e-2\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text("grad_clip: 5e-1\n")
    config = load_checked_config(["--dataset=toy", f"--data_path={data_dir}", f"--config_files={extra}"],
                                 config_dir=configs)
    assert (config.learning_rate, config.weight_decay, config.label_smoothing, config.warmup_ratio,
            config.grad_clip) == (3e-5, 1e-2, 0.1, 0.05, 0.5)
    assert yaml_numbers.load("a: 1e3\nb: '3e-5'\nc: 3e\nd: 7\n") == {"a": 1000.0, "b": "3e-5", "c": "3e", "d": 7}


def test_config_files_take_several_words_and_later_files_win(tmp_path: Path, data_dir: Path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("seed: 1\nepochs: 3\n")
    second.write_text("seed: 2\n")
    assert parse_argv(["--config_files", "a.yaml", "b.yaml", "--epochs=2"]) == \
        ({"config_files": ["a.yaml", "b.yaml"], "epochs": 2}, [])
    config = load_checked_config(["--config_files", str(first), str(second), f"--data_path={data_dir}"])
    assert (config.seed, config.epochs) == (2, 3)
    assert config.source_of("seed") == str(second)


def test_textbox_overall_and_samsum_files_load_with_each_translation_logged(data_dir: Path):
    config = load_checked_config(["--config_files", str(TEXTBOX2 / "overall.yaml"), str(TEXTBOX2 / "samsum.yaml"),
                                  f"--data_path={data_dir}", "--model=transformer", *OFFLINE_CPU])
    assert config.learning_rate == 3e-5 and config.tracker == "none" and config.gpu_id is None
    assert (config.metrics, config.metrics_for_best_model) == (["rouge"], ["rouge-1", "rouge-2", "rouge-l"])
    assert (config.train_batch_size, config.accumulation_steps, config.prefix_prompt) == (4, 48, "Summarize: ")
    notes = "\n".join(config.notes)
    assert "TextBox 2.0's 'rouge_type' in" in notes and "rouge_sentence_split='period'" in notes
    assert config.rouge_sentence_split == "period"  # ROUGE-L over files2rouge's sentences
    assert (config.bleu_type, config.corpus_bleu, config.smoothing_function) == ("nltk", False, 0)  # keys of ours
    assert "TextBox 2.0's --wandb='disabled' -> tracker='none'" in notes


def test_textbox_bleu_options_mean_what_they_meant_and_one_without_counterpart_is_refused_where_it_matters(
        data_dir: Path, tmp_path: Path):
    config = load_checked_config(["--config_files", str(TEXTBOX2 / "overall.yaml"), str(TEXTBOX2 / "dd.yaml"),
                                  f"--data_path={data_dir}", *OFFLINE_CPU])
    assert (config.bleu_type, config.smoothing_function) == ("nltk", 7)  # its overall.yaml's bleu_type, its own 7
    with pytest.raises(ConfigError, match="smoothing_function .*=7 is read by bleu_type='nltk' only"):
        load_checked_config(["--config_files", str(TEXTBOX2 / "dd.yaml"), f"--data_path={data_dir}"])
    paraphrase = tmp_path / "paranmt.yaml"
    paraphrase.write_text("metrics: ['bleu', 'rouge']\nrouge_type: py-rouge\n")
    with pytest.raises(ConfigError) as caught:
        load_checked_config(["--config_files", str(paraphrase), f"--data_path={data_dir}"])
    assert any("TextBox 2.0's 'rouge_type' in" in problem and "'py-rouge' is not provided" in problem
               for problem in caught.value.problems), caught.value.problems
    load_checked_config(["--config_files", str(paraphrase), f"--data_path={data_dir}", "--metrics=['bleu']"])


def test_model_yaml_fields_become_config_kwargs_and_tokenizer_path(data_dir: Path):
    resolution = resolve_config(["--config_files", str(TEXTBOX2 / "transformer.yaml"), f"--data_path={data_dir}"])
    assert resolution.problems == []
    config = resolution.config
    assert config.config_kwargs["d_model"] == 32 and config.config_kwargs["vocab_size"] == 50265
    assert config.tokenizer_path == "facebook/bart-base"
    rnn = resolve_config(["--model=gru", "--config_files", str(TEXTBOX2 / "rnn.yaml"), f"--data_path={data_dir}"])
    assert rnn.problems == []
    assert {key: rnn.config.config_kwargs[key] for key in ("embedding_size", "bidirectional", "hidden_size")} == \
        {"embedding_size": 16, "bidirectional": True, "hidden_size": 16}


def test_textbox_values_of_our_keys_and_conflicts(data_dir: Path):
    config = load_checked_config(["--scheduler=inverse", "--pretrain_task=disabled", f"--data_path={data_dir}"])
    assert (config.scheduler, config.pretrain_task) == ("inverse_sqrt", None)
    with pytest.raises(ConfigError) as caught:
        load_checked_config(["--wandb=online", "--tracker=none", f"--data_path={data_dir}"])
    assert any("means tracker='wandb', but command line also gives tracker='none'" in p for p in caught.value.problems)


@pytest.mark.parametrize("argv, pointer", [
    (["--resume_training=True"], "--model_path=saved/<run>"),
    (["--beam_size=4"], "generation_kwargs={'num_beams': N}"),
    (["--reproducibility=False"], "runs are always seeded"),
    (["--wandb=offline"], "WANDB_MODE=offline"),
    (["--pretrain_task=unilm"], "--pretrain_task=denoising (BART's text infilling"),
    (["--pretrain_task=text_infilling"], "--pretrain_task=denoising --permute_sentence_ratio=0"),
    (["--src_lang=en_XX", "--tokenizer_kwargs={'src_lang': 'de_DE'}"],
     "--src_lang='en_XX' but --tokenizer_kwargs gives src_lang='de_DE': keep one"),
    (["--optimizer=adafactor", "--adafactor_kwargs={'lr': 1e-3}"], "give them as optimizer_kwargs"),
    (["--tokenizer_path=some/tokenizer", "--model=bart", "--model_path=facebook/bart-base"],
     "the tokenizer comes with --model_path"),
])
def test_textbox_names_without_our_meaning_are_refused_with_a_pointer(argv, pointer, data_dir: Path):
    with pytest.raises(ConfigError) as caught:
        load_checked_config([*argv, f"--data_path={data_dir}"])
    assert any(pointer in problem for problem in caught.value.problems), caught.value.problems


def test_textbox_data_path_parent_is_refused_with_the_directory_to_give(tmp_path: Path):
    (tmp_path / "samsum").mkdir()
    for split in ("train", "valid", "test"):
        (tmp_path / "samsum" / f"{split}.src").write_text("a\n")
        (tmp_path / "samsum" / f"{split}.tgt").write_text("b\n")
    with pytest.raises(ConfigError) as caught:
        load_checked_config(["--dataset=samsum", f"--data_path={tmp_path}"])
    assert any(f"give --data_path={tmp_path / 'samsum'}" in problem for problem in caught.value.problems)


def test_the_names_table_covers_every_textbox_key_and_renders():
    textbox_keys = set()  # every key of TextBox 2.0's argument lists and of its yaml files (fixtures) is known
    for path in TEXTBOX2.glob("*.yaml"):
        textbox_keys |= set(yaml_numbers.load(path.read_text()))
    from textbox.config.schema import SCHEMA
    assert textbox_keys - set(SCHEMA) - set(TEXTBOX_NAMES) == set()
    assert "| `wandb` |" in render_table()


def test_the_docs_page_is_the_declared_table():
    assert render_table() in (PROJECT_ROOT / "docs" / "textbox_names.md").read_text()


def test_pretraining_reads_no_test_split_unless_asked(data_dir: Path):
    """TextBox 2.0 pre-trains without a test split (it set do_test=False); here it asked for test.src."""
    config = load_checked_config(["--pretrain_task=denoising", f"--data_path={data_dir}"])
    assert config.do_test is False
    assert any(note.startswith("pretrain_task: do_test=False") for note in config.notes)
    given = load_checked_config(["--pretrain_task=denoising", "--do_test=True", f"--data_path={data_dir}"])
    assert given.do_test is True


def test_textbox_overall_yaml_runs_unchanged_its_data_path_read_as_the_parent_of_the_datasets(tmp_path: Path,
                                                                                              monkeypatch):
    """TextBox 2.0 read data_path/<dataset> (its overall.yaml: data_path: 'dataset/'); here data_path is the dataset's
    own directory. A yaml file's parent is translated with a note; a dataset directory is ours and kept."""
    monkeypatch.chdir(tmp_path)
    make_toy_dataset(tmp_path / "dataset" / "samsum")
    config = load_checked_config(["--config_files", str(TEXTBOX2 / "overall.yaml"), str(TEXTBOX2 / "samsum.yaml"),
                                  "--dataset=samsum", "--model=transformer", *OFFLINE_CPU])
    assert config.data_path is None  # dataset/samsum, the default (or the catalogue's copy when it is absent)
    assert any(note.startswith("TextBox 2.0's data_path='dataset/' in ") and "dataset/samsum" in note
               for note in config.notes)
    own = make_toy_dataset(tmp_path / "corpora" / "samsum").parent
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"data_path: {own}/\n")
    assert load_checked_config([f"--config_files={mine}", "--dataset=samsum"]).data_path == str(own / "samsum")
    mine.write_text(f"data_path: {own / 'samsum'}\n")  # a dataset directory: our meaning, kept
    assert load_checked_config([f"--config_files={mine}", "--dataset=samsum"]).data_path == str(own / "samsum")
