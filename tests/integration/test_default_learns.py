"""The embedded default task (pydoc_keywords) is learnable: after training on a small slice, test metrics are clearly
better than those of the same model untrained, and the default fitted to a slice gives each of its inputs its own
output with no stutter. The full default run's figures are in docs/default_run.md. The runs are run_textbox.py's
entry in this process (one thread, as a subprocess's): a subprocess would add only its start-up."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_script_in_process

pytestmark = pytest.mark.slow

SMALL = ["--model=transformer", "--dataset=pydoc_keywords", "--quick_test=1500", "--src_len=64", "--tgt_len=24",
         "--tracker=none", "--eval_batch_size=64"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """One directory for the module's runs, with the built-in set built once in its dataset/pydoc_keywords."""
    from textbox.data.builtin import ensure_builtin

    directory = tmp_path_factory.mktemp("default")
    ensure_builtin("pydoc_keywords", directory / "dataset" / "pydoc_keywords", print)
    return directory


def test_trained_beats_untrained_on_a_slice(workdir: Path):
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    # 2 epochs of 47 steps (about 25 s of training): the margins below held with room to spare (test loss 5.95,
    # rouge-1 13.3, bleu-1 13.2; the untrained model writes nothing)
    trained = run_script_in_process([*SMALL, "--epochs=2", "--train_batch_size=32", "--learning_rate=0.002",
                                     "--warmup_steps=50", "--filename=trained"], cwd=workdir)
    assert trained.returncode == 0, trained.stderr[-3000:]
    best = workdir / "saved" / "trained" / "checkpoint_best"

    untrained_dir = workdir / "untrained"
    model = AutoModelForSeq2SeqLM.from_config(AutoConfig.from_pretrained(best))
    model.generation_config = AutoModelForSeq2SeqLM.from_pretrained(best).generation_config
    model.save_pretrained(untrained_dir)
    for name in best.iterdir():
        if "token" in name.name:
            shutil.copy(name, untrained_dir / name.name)
    untrained = run_script_in_process([*SMALL, f"--model_path={untrained_dir}", "--do_train=False",
                                       "--filename=untrained"], cwd=workdir)
    assert untrained.returncode == 0, untrained.stderr[-3000:]

    after = json.loads((workdir / "saved" / "trained" / "results.json").read_text())["test"]
    before = json.loads((workdir / "saved" / "untrained" / "results.json").read_text())["test"]
    assert after["loss"] < before["loss"] - 1.0  # perplexity several times lower
    assert after["rouge-1"] > before["rouge-1"] + 4.0, (before, after)
    assert after["bleu-1"] > before["bleu-1"] + 2.0, (before, after)


def distinct_percent(outputs: list[str]) -> float:
    return 100 * len(set(outputs)) / len(outputs)


def stutter_percent(outputs: list[str]) -> float:
    """Outputs holding one token three times in a row ("the current current current file")."""
    def stutters(text: str) -> bool:
        tokens = text.split()
        return any(a == b == c for a, b, c in zip(tokens, tokens[1:], tokens[2:]))
    return 100 * sum(map(stutters, outputs)) / len(outputs)


def test_the_default_gives_distinct_outputs_without_stutter_on_a_slice(workdir: Path):
    """The default's settings (configs/dataset/pydoc_keywords.yaml and configs/model/transformer.yaml: model, recipe
    and decoding), fitted to a 96-example slice of the training split and decoding that slice: what a minute of
    training can show. The model must tell its inputs apart (a model that ignores its sources gives one sentence to
    all; 94 of 96 outputs were distinct here) and the decoding must not stutter (none did). The full default run, on
    its unseen test split, gives the figures docs/default_run.md states."""
    train_sources = (workdir / "dataset" / "pydoc_keywords" / "train.src").read_text(encoding="utf-8").splitlines()
    sources = workdir / "train96.src"
    sources.write_text("".join(line + "\n" for line in train_sources[:96]), encoding="utf-8")
    fitted = run_script_in_process(["--quick_test=96", "--max_steps=400", "--warmup_steps=100", "--do_valid=False",
                                    f"--input_file={sources}", "--tracker=none", "--filename=fitted"], cwd=workdir)
    assert fitted.returncode == 0, fitted.stderr[-3000:]
    outputs = (workdir / "saved" / "fitted" / "generation.txt").read_text(encoding="utf-8").splitlines()
    assert len(outputs) == 96
    assert distinct_percent(outputs) >= 60, outputs
    assert stutter_percent(outputs) < 5, outputs
