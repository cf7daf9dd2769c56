"""A run's config.yaml, end to end: a bare --resume=True continues an interrupted run from its own config (same
result as an uninterrupted run), an incompatible key is refused with every file of the run unchanged, a rerun from
config.yaml of a run that had --filename works and gives the same results, and testing a run's checkpoint uses the
run's lengths."""
from __future__ import annotations

import hashlib
import json
import signal
from pathlib import Path

import pytest
import yaml

from tests.helpers import (TINY_MODEL_ARGS, make_copy_dataset, run_in_process, run_script_in_process,
                           sigterm_after_step, train_losses)

pytestmark = pytest.mark.slow


def _files(run_dir: Path) -> dict[str, str]:
    return {str(path.relative_to(run_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(run_dir.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, list[str]]:
    """An uninterrupted run ('whole'); no --dataset: the data directory's name ('copy') names the dataset."""
    work = tmp_path_factory.mktemp("run-config")
    data = make_copy_dataset(work / "copy", {"train": 48, "valid": 8, "test": 8})
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", "--epochs=3", "--logging_steps=1", "--valid_strategy=step",
            "--valid_steps=10", "--saved_dir=saved"]
    assert run_in_process([*args, "--filename=whole"], cwd=work) == 0  # one thread, as sigterm_after_step's run
    return work, args


def test_a_bare_resume_continues_from_the_runs_own_config(runs):
    work, args = runs
    whole_dir, cut_dir = work / "saved" / "whole", work / "saved" / "cut"
    returncode, stderr = sigterm_after_step([*args, "--filename=cut"], work, cut_dir, 4)
    assert returncode == 128 + signal.SIGTERM, stderr[-3000:]
    before = _files(cut_dir)

    refused = run_script_in_process(["--resume=True", "--filename=cut", "--saved_dir=saved",
                                     "--learning_rate=0.01", "--src_len=30"], cwd=work)
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "--learning_rate=0.01 differs from 0.003 in the run being resumed" in refused.stderr
    assert "--src_len=30 differs from 24" in refused.stderr and "Traceback" not in refused.stderr
    assert _files(cut_dir) == before  # every file of the run byte-identical, none added

    resumed = run_script_in_process(["--resume=True", "--filename=cut", "--saved_dir=saved"], cwd=work)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming saved/cut: its saved/cut/config.yaml is the base layer" in (cut_dir / "project.log").read_text()
    assert train_losses(cut_dir) == train_losses(whole_dir) and sorted(train_losses(whole_dir)) == list(range(1, 19))
    assert json.loads((cut_dir / "results.json").read_text())["test"] == \
        json.loads((whole_dir / "results.json").read_text())["test"]
    assert (cut_dir / "config.yaml").read_bytes() == (whole_dir / "config.yaml").read_bytes()  # never rewritten


def test_a_rerun_from_config_yaml_of_a_named_run_gives_the_same_results(runs):
    work, _ = runs
    whole_dir = work / "saved" / "whole"
    rerun = run_script_in_process([f"--config_files={whole_dir / 'config.yaml'}"], cwd=work)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    new = [path for path in (work / "saved").iterdir() if path.name.startswith("transformer-copy-")]
    assert len(new) == 1  # a new run, named after the model and the data directory
    assert train_losses(new[0]) == train_losses(whole_dir)
    again, first = (json.loads((path / "results.json").read_text()) for path in (new[0], whole_dir))
    assert again["test"] == first["test"] and again["valid"] == first["valid"]
    assert (new[0] / "generation.txt").read_text() == (whole_dir / "generation.txt").read_text()
    log = (new[0] / "project.log").read_text()
    assert "loaded tokenizer from cache" in log and "loaded tokenized train" in log  # tokenised once


def test_generating_from_a_run_checkpoint_uses_the_runs_lengths(runs):
    work, _ = runs
    whole_dir = work / "saved" / "whole"
    (work / "new.src").write_text("red cat big\n")
    done = run_script_in_process([f"--model_path={whole_dir / 'checkpoint_best'}", "--do_train=False",
                                  f"--data_path={work / 'copy'}", f"--input_file={work / 'new.src'}",
                                  "--filename=generate"], cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = work / "saved" / "generate"
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert (saved["model"], saved["src_len"], saved["tgt_len"]) == ("transformer", 24, 16)  # the run's, not 64
    log = (run_dir / "project.log").read_text()
    assert f"tgt_len = 16  ({whole_dir / 'config.yaml'})" in log
    assert "is a checkpoint of the run" in log
    assert len((run_dir / "generation.txt").read_text().splitlines()) == 1
