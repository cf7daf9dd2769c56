"""Rescoring a run's files with textbox-evaluate gives the figures of its results.json (one reader of references)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from textbox.evaluator.score_files import main as evaluate_files

pytestmark = pytest.mark.slow


def test_textbox_evaluate_on_a_runs_files_equals_its_results(trained_copy_run: Path, capsys):
    """The shared run's test set (tests/integration/conftest.py) is multi-reference, its list literals carrying
    whitespace around them (as a script may write them): the run and textbox-evaluate read two references per
    line, so the figures agree."""
    run_dir = trained_copy_run
    metrics = yaml.safe_load((run_dir / "config.yaml").read_text())["metrics"]
    assert set(metrics) == {"bleu", "rouge", "chrf"}
    references = run_dir.parent.parent / "copy" / "test.tgt"
    assert references.read_text().startswith(" ['")  # the list literals, with their whitespace
    figures = json.loads((run_dir / "results.json").read_text())["test"]
    assert evaluate_files([f"--hyp={run_dir / 'generation.txt'}", f"--ref={references}",
                           f"--metrics={metrics}"]) == 0
    rescored = json.loads(capsys.readouterr().out.splitlines()[-1])["scores"]
    assert rescored == pytest.approx({name: figures[name] for name in rescored})
    assert figures["bleu"] > 5  # the model writes words, so a wrong reading of the references shows
