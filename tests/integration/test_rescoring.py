"""Rescoring a run's files with textbox-evaluate gives the figures of its results.json (one reader of references)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_script
from textbox.evaluator.score_files import main as evaluate_files

pytestmark = pytest.mark.slow

METRICS = ["bleu", "rouge", "chrf"]


def test_textbox_evaluate_on_a_runs_files_equals_its_results(tmp_path: Path, capsys):
    """A multi-reference test set whose list literals carry whitespace around them (as a script may write them):
    the run and textbox-evaluate read two references per line, so the figures agree."""
    data = make_copy_dataset(tmp_path / "copy")
    sources = (data / "test.src").read_text().splitlines()
    targets = (data / "test.tgt").read_text().splitlines()
    (data / "test.tgt").write_text("".join(f" {[target, source]!r}\t\n" for source, target in zip(sources, targets)))
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--epochs=25", "--filename=run",
            f"--metrics={METRICS}", "--valid_strategy=epoch"]
    done = run_script(args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = tmp_path / "saved" / "run"
    figures = json.loads((run_dir / "results.json").read_text())["test"]
    assert evaluate_files([f"--hyp={run_dir / 'generation.txt'}", f"--ref={data / 'test.tgt'}",
                           f"--metrics={METRICS}"]) == 0
    rescored = json.loads(capsys.readouterr().out.splitlines()[-1])["scores"]
    assert rescored == pytest.approx({name: figures[name] for name in rescored})
    assert figures["bleu"] > 5  # the model writes words, so a wrong reading of the references shows
