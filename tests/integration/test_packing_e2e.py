"""run_textbox.py --packing=True trains what the padded run trains: a tiny Llama's training losses step by step
(weights updated by the packed batches' gradients) and its validation loss equal the padded run's, trained whole
(from scratch, --model=llama) and with LoRA and QLoRA on top (--model_path alone; no LoRA dropout, whose random masks would
fall on other positions in other layouts); and a packed run stopped and resumed trains exactly as an uninterrupted
one (packing depends on the sampler's batches alone)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.causal_helpers import save_tiny_causal_lm
from tests.helpers import make_copy_dataset, run_in_process, train_losses

COMMON = ["--dataset=copy", "--src_len=24", "--tgt_len=16", "--train_batch_size=8", "--logging_steps=1",
          "--do_test=False", "--learning_rate=0.01", "--scheduler=constant", "--warmup_steps=0", "--tracker=none"]


def losses(run: Path) -> list[float]:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [record["loss"] for record in records if "loss" in record]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> tuple[Path, list[str]]:
    """A directory with the reverse-the-words data and a tiny Llama; the arguments every run here shares."""
    work = tmp_path_factory.mktemp("packing")
    data = make_copy_dataset(work / "copy", {"train": 48, "valid": 8, "test": 4})
    texts = [*(data / "train.src").read_text().split("\n"), *(data / "train.tgt").read_text().split("\n")]
    base = save_tiny_causal_lm(work / "tiny-llama", texts, "llama", work / "tokenizer-cache")
    return work, [*COMMON, f"--model_path={base}", f"--data_path={data}"]


def test_packed_run_trains_as_the_padded_run(work):
    directory, common = work
    lora = ["--efficient_methods=['lora']", "--efficient_kwargs={'lora_dropout': 0.0}"]
    models = {"whole": ["--model=llama", "--from_scratch=True"], "lora": lora}
    if importlib.util.find_spec("bitsandbytes") is not None:  # QLoRA: LoRA on the NF4-quantised base
        models["qlora"] = [*lora, "--quantization=nf4"]
    for name, model in models.items():
        runs = {}
        for packing in (False, True):
            args = [*common, *model, "--max_steps=4", f"--filename={name}-{packing}", f"--packing={packing}"]
            assert run_in_process(args, cwd=directory) == 0
            runs[packing] = losses(directory / "saved" / f"{name}-{packing}")
        assert len(runs[True]) == 5  # 4 training steps, 1 validation
        assert len(set(runs[True])) == 5  # the weights moved: equal losses after it say the gradients were equal
        for packed, padded in zip(runs[True], runs[False]):
            assert abs(packed - padded) < 1e-5 * padded, name


def test_packed_run_resumes_exactly(work):
    directory, common = work
    args = [*common, "--model=llama", "--from_scratch=True", "--packing=True", "--epochs=2"]
    assert run_in_process([*args, "--filename=whole"], cwd=directory) == 0
    assert run_in_process([*args, "--filename=cut", "--max_steps=5"], cwd=directory) == 0
    assert run_in_process([*args, "--filename=cut", "--resume=True", "--max_steps=12"], cwd=directory) == 0
    whole = train_losses(directory / "saved" / "whole")
    assert sorted(whole) == list(range(1, 13))  # 6 steps an epoch: the cut and the resume cross an epoch
    assert train_losses(directory / "saved" / "cut") == whole
