"""The researcher's daily loop (issue 33): what a tiny run prints and leaves behind for the next person."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_script, run_script_in_process

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A --quick_test run of a few steps, stderr captured into a pipe (not a terminal), beam search set."""
    work = tmp_path_factory.mktemp("daily")
    data = make_copy_dataset(work / "copy", {"train": 96, "valid": 16, "test": 30})
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--quick_test=24", "--max_steps=4",
            "--filename=run", "--metrics=['bleu']", "--generation_kwargs={'num_beams': 3, 'no_repeat_ngram_size': 2}"]
    done = run_script(args, cwd=work, env={"TQDM_DISABLE": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    return work / "saved" / "run", done


def test_no_progress_bar_is_glued_onto_the_log_when_stderr_is_not_a_terminal(quick_run):
    _, done = quick_run
    assert "\r" not in done.stderr and "%|" not in done.stderr, done.stderr[-2000:]


def test_testing_a_quick_test_checkpoint_says_it_reads_the_whole_split(quick_run):
    run_dir, _ = quick_run
    done = run_script_in_process([f"--model_path={run_dir / 'checkpoint_best'}", "--do_train=False",
                                  "--filename=tested", "--tracker=none"], cwd=run_dir.parent.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "the checkpoint's run used quick_test=24; this test reads the whole split (give --quick_test=24" \
        in done.stderr
    assert len((run_dir.parent / "tested" / "generation.txt").read_text().splitlines()) == 30


def test_results_record_the_software_the_figures_were_made_with(quick_run):
    import json
    import platform

    import torch
    import transformers

    from textbox import __version__

    run_dir, _ = quick_run
    versions = json.loads((run_dir / "results.json").read_text())["versions"]
    assert versions["python"] == platform.python_version() and versions["torch"] == torch.__version__
    assert versions["transformers"] == transformers.__version__ and versions["textbox"] == __version__
    assert "accelerate" in versions and len(versions["git_revision"]) == 40 and isinstance(versions["git_dirty"], bool)
