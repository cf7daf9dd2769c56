"""The researcher's daily loop (issue 33): what a tiny run prints and leaves behind for the next person."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_script

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A --quick_test run of a few steps, stderr captured into a pipe (not a terminal), beam search set."""
    work = tmp_path_factory.mktemp("daily")
    data = make_copy_dataset(work / "copy")
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--quick_test=24", "--max_steps=4",
            "--filename=run", "--metrics=['bleu']", "--generation_kwargs={'num_beams': 3, 'no_repeat_ngram_size': 2}"]
    done = run_script(args, cwd=work, env={"TQDM_DISABLE": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    return work / "saved" / "run", done


def test_no_progress_bar_is_glued_onto_the_log_when_stderr_is_not_a_terminal(quick_run):
    _, done = quick_run
    assert "\r" not in done.stderr and "%|" not in done.stderr, done.stderr[-2000:]
