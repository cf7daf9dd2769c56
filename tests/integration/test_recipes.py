"""Each recipe of configs/recipes/ loads through the full validation (on a small made-up dataset, so that this part
needs nothing from ../shared) and runs a few steps on a slice of its own dataset with a tiny model (skipped when
../shared is absent). How good a recipe is, is a benchmark (benchmarks/recipes.py, docs/recipes.md), not a test."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT_ROOT
from tests.helpers import make_copy_dataset, run_script_in_process

RECIPES = sorted((PROJECT_ROOT / "configs" / "recipes").glob("*.yaml"))


def multi_reference_dataset(root: Path) -> Path:
    """Like CommonGen: valid/test list several references of one source on consecutive lines."""
    make_copy_dataset(root)
    for split in ("valid", "test"):
        sources = (root / f"{split}.src").read_text().splitlines()
        targets = (root / f"{split}.tgt").read_text().splitlines()
        (root / f"{split}.src").write_text("".join(f"{s}\n{s}\n" for s in sources))
        (root / f"{split}.tgt").write_text("".join(f"{t}\n{t} again\n" for t in targets))
    return root


def test_there_are_recipes():
    assert {path.stem for path in RECIPES} >= {"multi30k_en_de", "commongen"}


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda path: path.stem)
def test_recipe_loads_through_the_full_validation(recipe: Path, tmp_path: Path):
    from textbox.checks import load_checked_config

    data = multi_reference_dataset(tmp_path / "data")
    config = load_checked_config([f"--config_files={recipe}", f"--data_path={data}"])
    shipped = yaml.safe_load(recipe.read_text())
    for key, value in shipped.items():
        if isinstance(value, dict):  # dict keys merge with the model yaml's: the recipe's entries are all there
            assert {k: config[key][k] for k in value} == value, key
        else:
            assert config[key] == value, key
        assert config.source_of(key) == str(recipe) or isinstance(value, dict), key


TINY = ["--config_kwargs={'d_model': 32, 'encoder_layers': 1, 'decoder_layers': 1, 'encoder_ffn_dim': 64, "
        "'decoder_ffn_dim': 64}", "--tokenizer_kwargs={'vocab_size': 400}", "--quick_test=24", "--max_steps=3",
        "--tracker=none", "--filename=run"]


@pytest.mark.slow
@pytest.mark.parametrize("recipe", RECIPES, ids=lambda path: path.stem)
def test_recipe_runs_a_few_steps_on_its_dataset(recipe: Path, tmp_path: Path, shared_dataset):
    """The recipe as shipped, on a slice of its own dataset (../shared) with a tiny model: it trains, tests and
    scores every metric it names."""
    data = shared_dataset(recipe.stem)  # each recipe is named after its dataset
    done = run_script_in_process([f"--config_files={recipe}", f"--data_path={data}", *TINY], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = tmp_path / "saved" / "run"
    results = json.loads((run_dir / "results.json").read_text())
    assert results["steps"] == 3
    shipped = yaml.safe_load(recipe.read_text())
    names = {"rouge": "rouge-l"}
    assert {names.get(metric, metric) for metric in shipped["metrics"]} <= set(results["test"])
    generated = (run_dir / "generation.txt").read_text().splitlines()
    assert 0 < len(generated) <= 24
