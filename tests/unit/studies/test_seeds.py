"""The seed study with a fake pipeline: seeds from --seed, seeds.csv rows, and a summary checked against them."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import run_multi_seed
from tests.helpers import make_toy_dataset
from textbox.studies.seeds import derive_seeds, run_multi_seed as run_study, spread


def fake_run(config) -> dict:
    """Figures that vary with the seed in a known way."""
    (Path(config.saved_dir) / config.filename).mkdir(parents=True)
    wobble = (config.seed * 7919) % 13
    return {"valid": {"loss": 2.0 + wobble / 10}, "test": {"bleu": 20.0 + wobble, "rouge-1": 30.0 - wobble / 2}}


def run_failing_on_2021(config) -> dict:
    if config.seed == 2021:
        raise RuntimeError("CUDA out of memory")
    return fake_run(config)


@pytest.fixture
def study_args(tmp_path: Path) -> list[str]:
    data = make_toy_dataset(tmp_path / "data")
    return [f"--data_path={data}", f"--saved_dir={tmp_path / 'saved'}", "--filename=study", "--seed=2020"]


def test_seeds_are_derived_from_the_seed_deterministically():
    assert derive_seeds(2020, 4) == [2020, 2021, 2022, 2023]
    assert derive_seeds(7, 1) == [7]


def test_the_summary_matches_statistics_of_the_per_seed_rows(study_args):
    result = run_study([*study_args, "--multi_seed=5"], runner=fake_run)
    with open(result.directory / "seeds.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(row["seed"]) for row in rows] == [2020, 2021, 2022, 2023, 2024]
    assert set(rows[0]) == {"seed", "status", "valid_loss", "test_bleu", "test_rouge-1", "seconds", "error"}
    summary = json.loads((result.directory / "summary.json").read_text())
    assert summary["seeds"] == summary["finished"] == [2020, 2021, 2022, 2023, 2024] and summary["failed"] == {}
    for name in ("valid_loss", "test_bleu", "test_rouge-1"):
        values = np.array([float(row[name]) for row in rows])
        half_width = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
        figure = summary["figures"][name]
        assert figure["n"] == 5
        assert figure["mean"] == pytest.approx(values.mean())
        assert figure["std"] == pytest.approx(values.std(ddof=1))
        assert (figure["min"], figure["max"]) == (values.min(), values.max())
        assert figure["ci95_low"] == pytest.approx(values.mean() - half_width)
        assert figure["ci95_high"] == pytest.approx(values.mean() + half_width)
    assert (result.directory / "seeds.png").read_bytes().startswith(b"\x89PNG")
    printed = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
               for line in result.table.splitlines() if line.startswith("| ")}
    assert printed["figure"] == ["n", "mean", "std", "min", "max", "95% CI"]
    bleu = summary["figures"]["test_bleu"]
    assert printed["test_bleu"] == ["5", f"{bleu['mean']:.4g}", f"{bleu['std']:.4g}", f"{bleu['min']:.4g}",
                                    f"{bleu['max']:.4g}", f"[{bleu['ci95_low']:.4g}, {bleu['ci95_high']:.4g}]"]


def test_one_seed_has_no_spread():
    single = spread([3.5])
    assert (single.n, single.mean, single.std, single.ci95_low, single.ci95_high) == (1, 3.5, None, None, None)


def test_a_failed_seed_is_reported_left_out_of_the_summary_and_fails_the_script(study_args, monkeypatch, capsys):
    result = run_study([*study_args, "--multi_seed=3"], runner=run_failing_on_2021)
    assert result.failed == {2021: "RuntimeError: CUDA out of memory"}
    assert result.spreads["test_bleu"].n == 2
    assert "CUDA out of memory" in (result.directory / "seed-2021" / "error.txt").read_text()

    import textbox.pipeline

    monkeypatch.setattr(textbox.pipeline, "run", run_failing_on_2021)
    code = run_multi_seed.main([*study_args[:2], "--filename=again", "--seed=2020", "--multi_seed=3"])
    captured = capsys.readouterr()
    assert code == 1
    assert "| test_bleu" in captured.out
    assert "1 seed run(s) failed (2021)" in captured.err


def test_a_used_directory_and_a_missing_count_are_user_errors(study_args, capsys):
    run_study([*study_args, "--multi_seed=2"], runner=fake_run)
    assert run_multi_seed.main([*study_args, "--multi_seed=2"]) == 2
    assert "study already holds files; choose another --filename" in capsys.readouterr().err
    assert run_multi_seed.main(study_args) == 2
    assert "--multi_seed is required" in capsys.readouterr().err


def test_a_bounded_figures_interval_stays_in_its_range():
    """BLEU of seeds near 0 (0.0, 0.011, 0.0): the plain t-interval is [-0.036, 0.058]; BLEU is never below 0."""
    values = [0.0, 0.0333, 0.0]
    plain = spread(values)
    assert plain.ci95_low is not None and plain.ci95_low < 0
    bleu = spread(values, (0.0, 100.0))
    assert bleu.ci95_low == 0.0 and bleu.ci95_high == pytest.approx(plain.ci95_high)
    assert spread([99.0, 100.0, 100.0], (0.0, 100.0)).ci95_high == 100.0
