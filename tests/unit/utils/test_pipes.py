"""A reader that closes stdout early (``python run_textbox.py --help | head -1``): a quiet exit, no traceback."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import PROJECT_ROOT
from textbox.utils.pipes import SIGPIPE_EXIT_CODE


@pytest.mark.parametrize("script", ["run_textbox.py", "run_hyper.py", "run_multi_seed.py"])
def test_help_into_a_pipe_closed_early_exits_quietly(script: str):
    process = subprocess.Popen([sys.executable, str(PROJECT_ROOT / script), "--help"], cwd=PROJECT_ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the help is printed (was: a BrokenPipeError traceback)
    code = process.wait(timeout=120)
    assert process.stderr.read() == b""
    assert code in (0, SIGPIPE_EXIT_CODE)
