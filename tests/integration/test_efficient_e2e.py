"""Parameter-efficient tuning end to end through run_textbox.py: a tiny saved BART tuned with LoRA, BitFit and
prompt-tuning; checkpoint_best holds only the trained parameters, reloads from its files for testing and resumes
exactly. Every run is run_textbox.py's entry in this process (one thread): a subprocess would add only its start-up."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.helpers import make_copy_dataset, run_in_process, run_script_in_process, tiny_bart_config, train_losses

BASE_ARGS = ["--model=bart", "--dataset=copy", "--src_len=24", "--tgt_len=16", "--train_batch_size=8",
             "--eval_batch_size=16", "--learning_rate=0.01", "--scheduler=constant", "--warmup_steps=0",
             "--logging_steps=1", "--tracker=none", "--valid_strategy=step", "--valid_steps=4", "--max_steps=8",
             "--metrics=['bleu']"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[Path, Path]:
    """(data directory, a tiny BART saved with its tokenizer, standing in for a pretrained model)."""
    import torch
    from transformers import BartForConditionalGeneration

    from textbox.model.tokenizer import train_bpe_tokenizer

    root = tmp_path_factory.mktemp("efficient")
    data = make_copy_dataset(root / "copy")
    texts = (data / "train.src").read_text().splitlines() + (data / "train.tgt").read_text().splitlines()
    tokenizer = train_bpe_tokenizer(texts, 300, 1, root / "cache", log=lambda _: None)
    torch.manual_seed(0)
    model = BartForConditionalGeneration(tiny_bart_config(tokenizer))
    base = root / "tiny-bart"
    model.save_pretrained(base)
    tokenizer.save_pretrained(base)
    return data, base


def _run(setup, tmp_path, *args):
    data, base = setup
    result = run_script_in_process([*BASE_ARGS, f"--data_path={data}", f"--model_path={base}", *args], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _train_in_process(setup, tmp_path, *args) -> None:
    """A training the tests compare against; the runs that reload or resume what it saved are new runs (_run), as a
    user's are."""
    data, base = setup
    assert run_in_process([*BASE_ARGS, f"--data_path={data}", f"--model_path={base}", *args], cwd=tmp_path) == 0


@pytest.fixture(scope="module")
def lora_run(setup, tmp_path_factory) -> Path:
    """One 8-step LoRA run: the run the LoRA test inspects and the uninterrupted run a resumed one must equal."""
    work = tmp_path_factory.mktemp("lora")
    _train_in_process(setup, work, "--efficient_methods=['lora']", "--filename=lora")
    return work / "saved" / "lora"


def test_lora_saves_the_adapter_only_and_it_reloads_for_testing(setup, lora_run, tmp_path):
    _, base = setup
    run_dir = lora_run
    log = (run_dir / "project.log").read_text()
    assert "efficient tuning: lora; 3,072 of " in log and "trainable (" in log
    losses = train_losses(run_dir)
    assert losses[8] < losses[1]
    best = run_dir / "checkpoint_best"
    names = {path.name for path in best.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= names
    assert not names & {"config.json", "model.safetensors"}
    assert (best / "adapter_model.safetensors").stat().st_size < 0.1 * (base / "model.safetensors").stat().st_size
    assert json.loads((best / "adapter_config.json").read_text())["base_model_name_or_path"] == str(base.resolve())
    results = json.loads((run_dir / "results.json").read_text())
    assert "bleu" in results["test"]

    # a new run tests checkpoint_best: base model + adapter, loaded from its files, give the same outputs and figures
    _run(setup, tmp_path, f"--model_path={best}", "--do_train=False", "--filename=lora-test")
    test_dir = tmp_path / "saved" / "lora-test"
    assert (test_dir / "generation.txt").read_text() == (run_dir / "generation.txt").read_text()
    assert json.loads((test_dir / "results.json").read_text())["test"] == results["test"]


@pytest.mark.parametrize("method", ["bitfit", "prompt-tuning"])
def test_bitfit_and_prompt_tuning_train_save_and_reload(setup, tmp_path, method):
    _train_in_process(setup, tmp_path, f"--efficient_methods=['{method}']", "--filename=run", "--max_steps=4")
    run_dir = tmp_path / "saved" / "run"
    assert f"efficient tuning: {method};" in (run_dir / "project.log").read_text()
    best = run_dir / "checkpoint_best"
    assert not (best / "model.safetensors").exists()
    assert (best / ("bitfit_config.json" if method == "bitfit" else "adapter_config.json")).is_file()
    _run(setup, tmp_path, f"--model_path={best}", "--do_train=False", "--filename=test")
    assert (tmp_path / "saved" / "test" / "generation.txt").read_text() == (run_dir / "generation.txt").read_text()


def test_a_resumed_lora_run_equals_an_uninterrupted_one(setup, lora_run, tmp_path):
    """Stopped after step 4 (its checkpoint_last) and resumed to step 8 = 8 steps in one go (lora_run)."""
    _run(setup, tmp_path, "--efficient_methods=['lora']", "--filename=cut", "--max_steps=4")
    _run(setup, tmp_path, "--efficient_methods=['lora']", "--filename=cut", "--resume=True")
    whole, cut = lora_run, tmp_path / "saved" / "cut"
    assert train_losses(cut) == train_losses(whole) and sorted(train_losses(cut)) == list(range(1, 9))
    digest = lambda path: hashlib.sha256(path.read_bytes()).hexdigest()  # noqa: E731
    name = "checkpoint_best/adapter_model.safetensors"
    assert digest(cut / name) == digest(whole / name)
