"""run_textbox.py --packing=True trains what the padded run trains: a tiny Llama's training losses step by step
(weights updated by the packed batches' gradients) and its validation loss equal the padded run's, trained whole
(from scratch, --model=llama) and with LoRA on top (--model_path alone; no LoRA dropout, whose random masks would
fall on other positions in other layouts)."""
from __future__ import annotations

import json
from pathlib import Path

from tests.causal_helpers import save_tiny_causal_lm
from tests.helpers import make_copy_dataset, run_in_process


def losses(run: Path) -> list[float]:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [record["loss"] for record in records if "loss" in record]


def test_packed_run_trains_as_the_padded_run(tmp_path):
    data = make_copy_dataset(tmp_path / "copy", {"train": 48, "valid": 8, "test": 4})
    texts = [*(data / "train.src").read_text().split("\n"), *(data / "train.tgt").read_text().split("\n")]
    base = save_tiny_causal_lm(tmp_path / "tiny-llama", texts, "llama", tmp_path / "tokenizer-cache")
    lora = ["--efficient_methods=['lora']", "--efficient_kwargs={'lora_dropout': 0.0}"]
    for name, model in {"whole": ["--model=llama", "--from_scratch=True"], "lora": lora}.items():
        runs = {}
        for packing in (False, True):
            args = [*model, f"--model_path={base}", f"--data_path={data}", "--dataset=copy", "--max_steps=4",
                    f"--filename={name}-{packing}", "--src_len=24", "--tgt_len=16", "--train_batch_size=8",
                    "--logging_steps=1", f"--packing={packing}", "--do_test=False", "--learning_rate=0.01",
                    "--scheduler=constant", "--warmup_steps=0", "--tracker=none"]
            assert run_in_process(args, cwd=tmp_path) == 0
            runs[packing] = losses(tmp_path / "saved" / f"{name}-{packing}")
        assert len(runs[True]) == 5  # 4 training steps, 1 validation
        assert len(set(runs[True])) == 5  # the weights moved: equal losses after it say the gradients were equal
        for packed, padded in zip(runs[True], runs[False]):
            assert abs(packed - padded) < 1e-5 * padded, name
