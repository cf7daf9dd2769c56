"""Every ``--model`` family of the name table (textbox.config.families; docs/textbox_names.md) trains two optimiser
steps on a tiny checkpoint of its own class (tests/family_helpers.py) and decodes, greedy and with 2 beams, through
run_textbox.py's entry (``run_cli``, in this process: one interpreter start for every family), with results.json,
one output line per test example and checkpoint_best written. Where CTranslate2 converts the class, the saved
checkpoint is decoded again on CTranslate2 and its outputs must equal transformers'.

The decoding runs test checkpoint_best alone (--do_train=False), as a user tests a trained model; beam search sets
early_stopping=True, the stopping rule both engines share (textbox.decoding.ctranslate2_settings).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.family_helpers import CHECKPOINTS, FROM_SCRATCH, family_dataset, run_args, save_checkpoint
from tests.helpers import run_in_process
from textbox.config.families import CTRANSLATE2_GENERATOR_TYPES, CTRANSLATE2_TRANSLATOR_TYPES, FAMILIES

TEST_EXAMPLES = 6  # two evaluation batches of 4: padding, and outputs put back in dataset order
COMMON = ["--dataset=tiny", "--src_len=16", "--tgt_len=8", "--train_batch_size=4", "--eval_batch_size=4",
          "--tracker=none", "--metrics=['bleu']", "--do_valid=False", "--seed=1"]
BEAMS = "--generation_kwargs={'num_beams': 2, 'early_stopping': True}"


def _converts(name: str) -> bool:
    """Whether CTranslate2 converts the class of ``name``'s checkpoint (the engine's own list of model types;
    the transformer family is a BART)."""
    model_type = "bart" if name == "transformer" else CHECKPOINTS[name].model_type if name in CHECKPOINTS else None
    return FAMILIES[name].ctranslate2 and model_type in (*CTRANSLATE2_TRANSLATOR_TYPES, *CTRANSLATE2_GENERATOR_TYPES)


# Settings CTranslate2 refuses on purpose: M2M100 and NLLB force their target language's code as the first token
# (forced_bos_token_id), which CTranslate2 cannot do alike with beams (textbox.decoding.ctranslate2_settings).
_REFUSED = {("m2m_100", 2), ("nllb", 2)}
ENGINE_CASES = [pytest.param(name, beams, id=f"{name}-{'greedy' if beams == 1 else 'beam2'}")
                for name in FAMILIES if _converts(name) for beams in (1, 2) if (name, beams) not in _REFUSED]


class Runs:
    """The module's runs, each made once, in one working directory (caches shared, run directories apart)."""

    def __init__(self, root: Path):
        self.root = root
        self.data = family_dataset(root / "tiny", {"train": 8, "test": TEST_EXAMPLES})
        self.outputs: dict[tuple[str, str, int], str] = {}

    def trained(self, name: str) -> Path:
        """The run directory of ``name`` trained two steps and tested greedily on transformers."""
        run_dir = self.root / "saved" / f"{name}-train"
        if not (run_dir / "results.json").is_file():
            checkpoint = self.root / "checkpoints" / name
            if name in CHECKPOINTS:
                save_checkpoint(name, checkpoint, self.root / "tokenizers")
            code = run_in_process([*run_args(name, checkpoint), f"--data_path={self.data}", *COMMON,
                                   "--max_steps=2", "--decoding_backend=transformers", f"--filename={name}-train"],
                                  cwd=self.root)
            assert code == 0, (run_dir / "project.log").read_text()[-3000:] if run_dir.is_dir() else code
        return run_dir

    def decoded(self, name: str, backend: str, beams: int) -> str:
        """generation.txt of checkpoint_best tested alone on ``backend`` with ``beams`` beams."""
        key = (name, backend, beams)
        if key not in self.outputs:
            trained = self.trained(name)
            if backend == "transformers" and beams == 1:
                self.outputs[key] = (trained / "generation.txt").read_text()
                return self.outputs[key]
            filename = f"{name}-{backend}-{beams}"
            code = run_in_process([f"--model={name}", f"--model_path={trained / 'checkpoint_best'}",
                                   f"--data_path={self.data}", *COMMON, "--do_train=False",
                                   f"--decoding_backend={backend}", f"--filename={filename}",
                                   *([BEAMS] if beams > 1 else [])], cwd=self.root)
            run_dir = self.root / "saved" / filename
            assert code == 0, (run_dir / "project.log").read_text()[-3000:] if run_dir.is_dir() else code
            assert (run_dir / "results.json").is_file()  # an explicit backend that cannot decode is an error
            self.outputs[key] = (run_dir / "generation.txt").read_text()
        return self.outputs[key]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("families"))


def test_every_family_of_the_name_table_has_a_tiny_checkpoint():
    assert set(FAMILIES) == set(CHECKPOINTS) | set(FROM_SCRATCH)
    assert not set(CHECKPOINTS) & set(FROM_SCRATCH)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_family_trains_two_steps_and_decodes_greedy_and_with_beams(name: str, runs: Runs):
    run_dir = runs.trained(name)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["steps"] == 2
    assert math.isfinite(results["test"]["loss"]) and "bleu" in results["test"]
    assert (run_dir / "checkpoint_best" / "config.json").is_file()
    for beams in (1, 2):
        lines = runs.decoded(name, "transformers", beams).split("\n")
        assert lines[-1] == "" and len(lines) == TEST_EXAMPLES + 1, lines  # one line per example, each ended


@pytest.mark.parametrize("name, beams", ENGINE_CASES)
def test_ctranslate2_decodes_a_family_as_transformers_does(name: str, beams: int, runs: Runs):
    expected = runs.decoded(name, "transformers", beams)
    assert expected.strip(), "outputs that are all empty would agree whatever the engines do"
    assert runs.decoded(name, "ctranslate2", beams) == expected
