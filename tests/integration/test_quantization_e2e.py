"""Quantised base weights end to end through run_textbox.py (bitsandbytes on the CPU): NF4 + LoRA (QLoRA) on a tiny
saved BART and INT8 + LoRA on a tiny saved GPT-2 train; checkpoint_best holds the adapter and how to quantise its
base again; a new run reloads it quantised and tests it to the same outputs (and generates for --input_file);
a resumed run equals an uninterrupted one; an explicit CTranslate2 decodes the dequantised, merged model."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import run_hyper
from tests.helpers import make_copy_dataset, run_script_in_process, tiny_bart_config, train_losses

pytest.importorskip("bitsandbytes")

COMMON = ["--dataset=copy", "--src_len=24", "--tgt_len=16", "--train_batch_size=8", "--eval_batch_size=16",
          "--learning_rate=0.01", "--scheduler=constant", "--warmup_steps=0", "--logging_steps=1", "--tracker=none",
          "--valid_strategy=step", "--valid_steps=4", "--max_steps=8", "--metrics=['bleu']",
          "--efficient_methods=['lora']"]
# (family, quantisation keys): QLoRA's NF4 with double quantisation on an encoder-decoder, INT8 on a decoder-only LM
CASES = {"nf4": ("bart", ["--quantization=nf4", "--double_quantization=True"]),
         "int8": ("gpt2", ["--quantization=int8"])}


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    """(data directory, {"bart": a tiny saved BART, "gpt2": a tiny saved GPT-2}), standing in for pretrained models."""
    import torch
    from transformers import BartForConditionalGeneration

    from tests.causal_helpers import save_tiny_causal_lm
    from textbox.model.tokenizer import train_bpe_tokenizer

    root = tmp_path_factory.mktemp("quantized")
    data = make_copy_dataset(root / "copy")
    texts = (data / "train.src").read_text().splitlines() + (data / "train.tgt").read_text().splitlines()
    tokenizer = train_bpe_tokenizer(texts, 300, 1, root / "cache", log=lambda _: None)
    torch.manual_seed(0)
    bart = BartForConditionalGeneration(tiny_bart_config(tokenizer, d_model=64, encoder_ffn_dim=128,
                                                         decoder_ffn_dim=128))
    bart.save_pretrained(root / "tiny-bart")
    tokenizer.save_pretrained(root / "tiny-bart")
    gpt2 = save_tiny_causal_lm(root / "tiny-gpt2", texts, "gpt2", root / "cache")
    return data, {"bart": root / "tiny-bart", "gpt2": gpt2}


def _run(bases, cwd: Path, case: str, *args: str):
    data, models = bases
    family, keys = CASES[case]
    result = run_script_in_process([*COMMON, f"--model={family}", f"--data_path={data}",
                                    f"--model_path={models[family]}", *keys, *args], cwd=cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module", params=sorted(CASES))
def trained(request, bases, tmp_path_factory) -> tuple[str, Path]:
    """(case, run directory) of one 8-step run: inspected, reloaded, and the uninterrupted run a resumed one equals."""
    work = tmp_path_factory.mktemp(request.param)
    _run(bases, work, request.param, "--filename=run")
    return request.param, work / "saved" / "run"


def test_the_adapter_trains_on_the_quantised_base_and_reloads_quantised(bases, trained, tmp_path):
    case, run_dir = trained
    family = CASES[case][0]
    log = (run_dir / "project.log").read_text()
    assert f"quantised base weights: {case} (bitsandbytes" in log and "efficient tuning: lora;" in log
    losses = train_losses(run_dir)
    assert sorted(losses) == list(range(1, 9)) and losses[8] < losses[1]
    best = run_dir / "checkpoint_best"
    names = {path.name for path in best.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors", "base_quantization.json"} <= names
    assert not names & {"config.json", "model.safetensors"}
    record = json.loads((best / "base_quantization.json").read_text())
    assert record["method"] == case and record["double_quantization"] == (case == "nf4")
    assert "decoding with transformers: --decoding_backend=auto: the base weights are quantised" in log
    results = json.loads((run_dir / "results.json").read_text())

    # a new run tests checkpoint_best, loaded from its files: the base quantised again from the record, the same outputs
    (tmp_path / "inputs.txt").write_text("red cat dog\nblue tree\n")
    args = [f"--model={family}", f"--model_path={best}", "--do_train=False", "--tracker=none", "--metrics=['bleu']"]
    tested = run_script_in_process([*args, "--filename=test"], cwd=tmp_path)
    assert tested.returncode == 0, tested.stderr[-3000:]
    test_dir = tmp_path / "saved" / "test"
    assert f"quantised base weights: {case}" in (test_dir / "project.log").read_text()
    assert (test_dir / "generation.txt").read_text() == (run_dir / "generation.txt").read_text()
    assert json.loads((test_dir / "results.json").read_text())["test"] == results["test"]
    generated = run_script_in_process([*args, f"--input_file={tmp_path / 'inputs.txt'}",
                                       f"--output_file={tmp_path / 'out.txt'}", "--filename=inputs"], cwd=tmp_path)
    assert generated.returncode == 0, generated.stderr[-3000:]
    assert len((tmp_path / "out.txt").read_text().splitlines()) == 2


def test_a_resumed_run_equals_an_uninterrupted_one(bases, trained, tmp_path):
    case, whole = trained
    _run(bases, tmp_path, case, "--filename=cut", "--max_steps=4")
    _run(bases, tmp_path, case, "--filename=cut", "--resume=True")
    cut = tmp_path / "saved" / "cut"
    assert train_losses(cut) == train_losses(whole)
    digest = lambda path: hashlib.sha256(path.read_bytes()).hexdigest()  # noqa: E731
    name = "checkpoint_best/adapter_model.safetensors"
    assert digest(cut / name) == digest(whole / name)


def test_ctranslate2_decodes_the_dequantised_merged_model(bases, trained, tmp_path):
    """Asked for explicitly, CTranslate2 converts the float model the quantised layers stand for (plus the merged
    adapter); its outputs agree with generate's on the quantised model for nearly every example."""
    case, run_dir = trained
    family = CASES[case][0]
    done = run_script_in_process([f"--model={family}", f"--model_path={run_dir / 'checkpoint_best'}",
                                  "--do_train=False", "--tracker=none", "--decoding_backend=ctranslate2",
                                  "--filename=ct2"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    log = (tmp_path / "saved" / "ct2" / "project.log").read_text()
    assert "decoding with ctranslate2" in log
    ours = (tmp_path / "saved" / "ct2" / "generation.txt").read_text().splitlines()
    reference = (run_dir / "generation.txt").read_text().splitlines()
    assert len(ours) == len(reference)
    assert sum(a == b for a, b in zip(ours, reference)) >= len(reference) - 2


def test_a_search_tests_its_best_qlora_trial_on_the_quantised_base(bases, tmp_path, monkeypatch, capsys):
    """run_hyper.py (its entry, in this process): the trials train NF4 + LoRA; the best trial's checkpoint_best is
    tested with its base quantised again from the record (the search does not pass model-building keys to that
    test)."""
    data, models = bases
    space = tmp_path / "lr.space"
    space.write_text("learning_rate choice [0.003, 0.01]\n")
    monkeypatch.chdir(tmp_path)
    code = run_hyper.main([f"--space={space}", "--algo=exhaustive", "--filename=search", *COMMON, "--model=bart",
                           f"--data_path={data}", f"--model_path={models['bart']}", *CASES["nf4"][1]])
    assert code == 0, capsys.readouterr().err[-3000:]
    directory = tmp_path / "saved" / "search"
    best = json.loads((directory / "best.json").read_text())
    assert "bleu" in best["test"]
    tested = (directory / f"test-{best['trial']}" / "project.log").read_text()
    assert "quantised base weights: nf4 (bitsandbytes 4-bit, double quantisation" in tested


def test_checkpoint_averaging_on_a_quantised_base_averages_the_adapters(bases, tmp_path):
    """--average_checkpoints on an NF4 base with LoRA trained and then failed in load_state_dict on bitsandbytes'
    absmax/quant_map keys, with no test results: the adapters alone are averaged (the base is the same in every
    checkpoint), the average is validated, and the run tests."""
    result = _run(bases, tmp_path, "nf4", "--filename=run", "--valid_steps=2", "--average_checkpoints=3",
                  "--max_save=-1")
    results = json.loads((tmp_path / "saved" / "run" / "results.json").read_text())
    assert results["averaged"]["steps"] == [4, 6, 8] and "error" not in results["averaged"], results["averaged"]
    assert "loss" in results["averaged"]["valid"] and "bleu" in results["test"]
    assert "Traceback" not in result.stderr
