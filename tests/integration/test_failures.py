"""When a run fails: input problems are found before the run directory is made (exit 2, nothing written); a
failure after it is written to project.log and the run marked FAILED, so that a retry with the same --filename
reuses the directory (never a finished or resumable run's); with two processes the cause is shown once and every
process exits; --gpu_id naming missing devices is refused. And the console: no log line on a progress bar's line,
and a search prints a line per trial while each trial's project.log keeps the detail."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from textbox.cli import run_cli
from textbox.config import ConfigError, TextBoxError, TextBoxUserError, load_config
from textbox.config.run_config import LAST_CHECKPOINT
from textbox.pipeline import run_dir as run_dirs
from tests.conftest import PROJECT_ROOT
from tests.helpers import (TINY_MODEL_ARGS, make_copy_dataset, run_script, run_script_in_process, run_two_processes,
                           tiny_bart_config)
from tests.unit.utils.test_logging import BAR, LOG_LINE, mixed_lines, visible_lines

MAIN_PROCESS = SimpleNamespace(is_main_process=True, wait_for_everyone=lambda: None)


def a_config(saved: Path, **keys):
    return load_config([f"--saved_dir={saved}", "--filename=run", *(f"--{k}={v}" for k, v in keys.items())])


# --- which directories a new run may take -------------------------------------------------------------------------

def test_a_failed_run_is_replaced_by_a_retry_with_the_same_name(tmp_path, fresh_accelerate_state):
    run = tmp_path / "run"
    (run / "checkpoint_best").mkdir(parents=True)
    for name in ("config.yaml", "project.log"):
        (run / name).write_text("from the failed run\n")
    run_dirs.mark_failed(run, "RuntimeError: boom")
    config = a_config(tmp_path)
    assert run_dirs.plan_run_dir(config, MAIN_PROCESS) == run
    assert sorted(p.name for p in run.iterdir()) == ["FAILED", "checkpoint_best", "config.yaml", "project.log"]
    run_dirs.make_run_dir(run, config, MAIN_PROCESS)  # the failed run's files go only once the new run is ready
    assert run.is_dir() and list(run.iterdir()) == []


def test_a_failed_run_with_a_checkpoint_last_needs_resume_or_another_name(tmp_path, fresh_accelerate_state):
    run = tmp_path / "run"
    (run / LAST_CHECKPOINT).mkdir(parents=True)
    run_dirs.mark_failed(run, "RuntimeError: boom")
    with pytest.raises(TextBoxUserError, match="holds a failed run with a checkpoint_last .* continue it with "
                                               "--resume=True, or choose another --filename"):
        run_dirs.plan_run_dir(a_config(tmp_path), MAIN_PROCESS)
    assert (run / LAST_CHECKPOINT).is_dir() and (run / "FAILED").is_file()


def test_resuming_a_run_that_failed_before_any_checkpoint_says_to_start_again(tmp_path, fresh_accelerate_state):
    run = tmp_path / "run"
    run.mkdir()
    run_dirs.mark_failed(run, "RuntimeError: boom")
    with pytest.raises(ConfigError, match="failed before its first checkpoint_last .* start it again without "
                                          "--resume"):
        a_config(tmp_path, resume=True)  # found while the config loads, before anything is built


def test_resuming_a_run_killed_before_its_first_checkpoint_last_is_an_input_error(tmp_path, fresh_accelerate_state,
                                                                                    capsys):
    """A run killed (SIGKILL, a lost machine) before its first checkpoint_last has a config.yaml but nothing to
    continue: --resume=True says so and exits 2 (an input error), before anything is built, changing nothing."""
    run = tmp_path / "run"
    run.mkdir()
    data = make_copy_dataset(tmp_path / "copy")
    run_dirs.write_run_config(a_config(tmp_path, data_path=data, dataset="copy", tracker="none"), run)
    before = sorted(path.name for path in run.iterdir())
    code = run_cli([f"--saved_dir={tmp_path}", "--filename=run", "--resume=True"])
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    assert f"error: --resume=True: the run in {run} has no {LAST_CHECKPOINT}" in err
    assert "start it again without --resume" in err and "Traceback" not in err
    assert sorted(path.name for path in run.iterdir()) == before


def test_a_finished_run_is_never_replaced(tmp_path, fresh_accelerate_state):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text("{}\n")
    with pytest.raises(TextBoxUserError, match="already holds a run; choose another --filename"):
        run_dirs.plan_run_dir(a_config(tmp_path), MAIN_PROCESS)
    assert (run / "results.json").read_text() == "{}\n"


# --- problems found before the run directory is made -----------------------------------------------------------------

@pytest.fixture(scope="module")
def bad_model_path_run(tmp_path_factory) -> tuple[Path, list[str], subprocess.CompletedProcess]:
    """(work directory, arguments, the one-process run, in this process): --model_path names a directory with no
    config.json, which the builder refuses on rank 0. Shared by the one-process and the two-process test."""
    work = tmp_path_factory.mktemp("bad-model-path")
    data = make_copy_dataset(work / "copy")
    (work / "empty").mkdir()
    args = ["--model=bart", f"--model_path={work / 'empty'}", f"--data_path={data}", "--dataset=copy",
            "--tracker=none", "--filename=bad"]
    return work, args, run_script_in_process(args, cwd=work)


def test_a_bad_model_path_fails_before_anything_is_written(bad_model_path_run):
    work, _, done = bad_model_path_run
    assert done.returncode == 2, done.stderr[-2000:]
    assert "error: --model_path=" in done.stderr and "has no config.json" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (work / "saved").exists()


def _small_bart_checkpoint(path: Path, texts: list[str], **config) -> Path:
    """A save_pretrained BART directory (16 positions unless ``config`` says otherwise) with a BPE tokenizer."""
    from transformers import BartForConditionalGeneration

    from textbox.model.tokenizer import train_bpe_tokenizer

    tokenizer = train_bpe_tokenizer(texts, vocab_size=300, min_frequency=1, cache_dir=path.parent / "cache",
                                    log=lambda _: None)
    sizes = dict(d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=1, decoder_attention_heads=1,
                 encoder_ffn_dim=16, decoder_ffn_dim=16, max_position_embeddings=16)
    BartForConditionalGeneration(tiny_bart_config(tokenizer, **{**sizes, **config})).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.mark.parametrize("problem, arguments, message", [
    ("positions", ["--src_len=24", "--tgt_len=8"],
     "error: --src_len=24 exceeds the 16 positions of the model's encoder"),
    ("model_type", ["--src_len=16", "--tgt_len=8"], "says model_type 'bart_v9', which transformers"),
])
def test_a_checkpoint_that_cannot_run_these_settings_fails_before_anything_is_written(tmp_path, problem, arguments,
                                                                                     message):
    """Sources beyond the model's position table failed with an IndexError in the first step, after the run
    directory was made; a config.json whose model_type transformers does not know gave two tracebacks (exit 1)."""
    data = make_copy_dataset(tmp_path / "copy")
    checkpoint = _small_bart_checkpoint(tmp_path / "checkpoint", (data / "train.src").read_text().splitlines())
    if problem == "model_type":
        config = json.loads((checkpoint / "config.json").read_text())
        (checkpoint / "config.json").write_text(json.dumps({**config, "model_type": "bart_v9"}))
    done = run_script_in_process([f"--model_path={checkpoint}", "--model=seq2seq", f"--data_path={data}",
                                  "--tracker=none", *arguments], cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "saved").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA devices")
def test_gpu_id_on_a_machine_without_cuda_is_refused_before_anything_is_written(tmp_path):
    done = run_script_in_process(["--gpu_id=5", "--filename=gpu"], cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: --gpu_id=5, but ")
    assert "no CUDA device is visible; drop --gpu_id to run on the CPU" in done.stderr
    assert not (tmp_path / "saved").exists()


@pytest.mark.slow
def test_a_disk_too_small_for_the_checkpoints_is_found_before_the_directory_is_made(tmp_path, monkeypatch, capsys,
                                                                                    fresh_accelerate_state):
    monkeypatch.chdir(tmp_path)
    data = make_copy_dataset(tmp_path / "copy", {"train": 32, "valid": 8, "test": 8})
    usage = SimpleNamespace(total=2**30, used=2**30 - 1024, free=1024)
    monkeypatch.setattr("textbox.pipeline.run_dir.shutil.disk_usage", lambda path: usage)
    saved = tmp_path / "saved"
    assert run_cli([*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", f"--saved_dir={saved}",
                    "--filename=run"]) == 2
    assert "this run's checkpoints need about" in capsys.readouterr().err
    assert not saved.exists()


# --- failures after the run directory exists -------------------------------------------------------------------------

@pytest.fixture
def tiny_run_args(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # tokenizer and data caches under tmp_path
    data = make_copy_dataset(tmp_path / "copy", {"train": 32, "valid": 8, "test": 8})
    return [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--max_steps=2", f"--saved_dir={tmp_path}",
            "--filename=run"]


def failing(error: BaseException):
    def train_and_test(*args, **kwargs):
        raise error

    return train_and_test


@pytest.mark.slow
def test_an_unexpected_error_is_one_console_line_and_a_traceback_in_project_log(tiny_run_args, tmp_path, monkeypatch,
                                                                                 capsys, fresh_accelerate_state):
    monkeypatch.setattr("textbox.pipeline.recipe._fit_and_evaluate", failing(RuntimeError("boom")))
    assert run_cli(tiny_run_args) == 1
    console = capsys.readouterr().err
    log = (tmp_path / "run" / "project.log").read_text()
    assert console.rstrip().splitlines()[-2:] == [
        "error: unexpected RuntimeError: boom", f"(the traceback is in {tmp_path / 'run' / 'project.log'})"]
    assert "Traceback" not in console
    assert "the run failed: RuntimeError: boom" in log
    assert "Traceback (most recent call last)" in log and 'raise error' in log
    assert (tmp_path / "run" / "FAILED").read_text() == "RuntimeError: boom\n"

    monkeypatch.undo()  # the retry, same --filename: the directory is reused, the failure's traces are gone
    monkeypatch.chdir(tmp_path)
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    assert run_cli(tiny_run_args) == 0
    run = tmp_path / "run"
    assert not (run / "FAILED").exists()
    assert "boom" not in (run / "project.log").read_text()
    results = json.loads((run / "results.json").read_text())
    assert results["steps"] == 2 and results["device"] == "cpu" and results["num_processes"] == 1


@pytest.mark.slow
def test_a_metric_failing_on_the_test_split_costs_that_metric_alone(tiny_run_args, tmp_path, capsys,
                                                                    fresh_accelerate_state):
    """Training done, the test pass decoded, one metric fails while scoring: the other figures, generation.txt and
    results.json (with metric_errors) are written, the run is not marked FAILED, one error line says which metric
    and where the rest is, and the exit code is 1 so that scripts notice."""
    unloadable = tmp_path / "unloadable"
    unloadable.mkdir()
    (unloadable / "config.json").write_text("{}")  # passes the checks before the first step, fails when loaded
    code = run_cli([*tiny_run_args, "--metrics=['bleu','bert_score']", f"--bert_score_model_path={unloadable}"])
    console = capsys.readouterr().err
    run = tmp_path / "run"
    assert code == 1, console[-3000:]
    assert "Traceback" not in console
    assert console.rstrip().splitlines()[-1] == (
        "error: metric(s) bert_score failed on the test split (results.json's metric_errors says why); the other "
        f"figures and the outputs are in {run}")
    results = json.loads((run / "results.json").read_text())
    assert "bleu" in results["test"] and not any(name.startswith("bert_score") for name in results["test"])
    assert results["metric_errors"]["bert_score"].startswith(f"bert_score_model_path={unloadable}: cannot load")
    assert len((run / "generation.txt").read_text().splitlines()) == 8
    assert not (run / "FAILED").exists()
    assert "metric bert_score failed on the test split: bert_score_model_path=" in (run / "project.log").read_text()


@pytest.mark.slow
def test_a_framework_error_after_the_directory_exists_is_logged_and_marked(tiny_run_args, tmp_path, monkeypatch,
                                                                           capsys, fresh_accelerate_state):
    monkeypatch.setattr("textbox.pipeline.recipe._fit_and_evaluate", failing(TextBoxError("the disk is full")))
    assert run_cli(tiny_run_args) == 1
    assert capsys.readouterr().err.rstrip().splitlines()[-1] == "error: the disk is full"
    run = tmp_path / "run"
    assert "ERROR the run failed: the disk is full" in (run / "project.log").read_text()
    assert "Traceback" not in (run / "project.log").read_text()  # the message explains itself
    assert (run / "FAILED").read_text() == "the disk is full\n"
    assert (run / "config.yaml").is_file()


# --- two processes, one failure --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_build_failure_on_rank_0_is_shown_once_and_every_process_exits(bad_model_path_run):
    work, args, single = bad_model_path_run  # --model_path with no config.json: the builder refuses it on rank 0
    message = single.stderr.strip().splitlines()[-1]
    assert single.returncode == 2 and message.startswith("error: ")
    done = run_two_processes(args, work, timeout=300)
    assert done.returncode != 0
    assert done.stderr.count(message) == 1, done.stderr[-3000:]
    assert "gloo" not in done.stderr.lower()
    assert "terminate called" not in done.stderr
    # The only traceback is the launcher's own report that a child exited non-zero; none comes from our processes.
    assert done.stderr.count("Traceback") == done.stderr.count("ChildFailedError:") <= 1
    assert f'File "{PROJECT_ROOT / "textbox"}' not in done.stderr
    assert "exitcode  : 2" in done.stderr  # the process that did not fail exits with the failure's code, not a crash
    assert not (work / "saved").exists()


# --- the console ------------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_runs_console_never_mixes_a_bar_and_a_log_line(tmp_path):
    data = make_copy_dataset(tmp_path / "copy")
    done = run_script([*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--max_steps=24",
                       "--logging_steps=2", "--filename=console"], cwd=tmp_path, timeout=600,
                      env={"TQDM_DISABLE": "0"})  # bars drawn into the captured stderr, as on a terminal
    assert done.returncode == 0, done.stderr[-3000:]
    console = done.stdout + done.stderr
    lines = visible_lines(console)
    assert sum(bool(LOG_LINE.search(line)) and "step " in line for line in lines) >= 10  # the step lines
    assert "train:" in console and BAR.search(console)  # and the bars, drawn between them
    assert mixed_lines(console) == []
    assert "Warning" not in console and "[transformers]" not in console


# A search prints a line per trial and each trial logs in full: test_hyper_cli.py checks it on its own search
# run (one search for both files).
