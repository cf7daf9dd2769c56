"""A seed study whose runs validate by generation on CTranslate2 (a conversion at every validation), two runs at a
time in worker processes sharing one cache directory: every seed finishes, and each seed's figures are those of the
same seed run alone. Workers used to empty the shared validation conversions before each of their own, another
worker's included ("Unable to open file 'model.bin'": 3 of 4 seeds failed)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import run_multi_seed
from tests.helpers import make_copy_dataset, run_in_process

pytestmark = pytest.mark.slow

TINY_RUN = [
    "--model=transformer",
    "--config_kwargs={'d_model':16,'encoder_layers':1,'decoder_layers':1,'encoder_attention_heads':2,"
    "'decoder_attention_heads':2,'encoder_ffn_dim':32,'decoder_ffn_dim':32}",
    "--tokenizer_kwargs={'vocab_size':300,'min_frequency':1}", "--src_len=24", "--tgt_len=16",
    "--max_steps=6", "--train_batch_size=16", "--eval_batch_size=16", "--learning_rate=0.003",
    "--scheduler=constant", "--warmup_steps=0", "--tracker=none",
    # validation by BLEU at every step: a CTranslate2 conversion of new weights each time (the default backend)
    "--valid_strategy=step", "--valid_steps=1", "--metrics=['bleu']", "--metrics_for_best_model=['bleu']",
]
SEEDS = (2020, 2021, 2022, 2023)


def _figures(run_dir: Path) -> dict:
    results = json.loads((run_dir / "results.json").read_text())
    return {split: results[split] for split in ("valid", "test")}


def test_a_two_worker_seed_study_validating_on_ctranslate2_runs_every_seed(tmp_path: Path):
    data = make_copy_dataset(tmp_path / "copy", {"train": 96, "valid": 16, "test": 8})
    common = [*TINY_RUN, f"--data_path={data}", "--dataset=copy", f"--cache_dir={tmp_path / 'cache'}",
              f"--saved_dir={tmp_path / 'saved'}"]

    assert run_multi_seed.main([f"--multi_seed={len(SEEDS)}", "--workers=2", "--filename=study", *common]) == 0
    study = tmp_path / "saved" / "study"
    rows = (study / "seeds.csv").read_text().splitlines()[1:]
    assert [row.split(",")[:2] for row in rows] == [[str(seed), "ok"] for seed in SEEDS]
    for seed in SEEDS:
        log = (study / f"seed-{seed}" / "project.log").read_text()
        assert "decoding with ctranslate2: --decoding_backend=auto" in log and "validation 6 at step 6" in log
        assert "decoding with transformers" not in log  # no validation switched engines

    # Each seed alone, one after another in this process (one thread, as a study worker has on 2 cores): the
    # same figures, so that the study's spread is that of the seeds, not of the workers sharing a cache.
    for seed in SEEDS:
        assert run_in_process([*common, f"--seed={seed}", f"--filename=alone-{seed}"], cwd=tmp_path) == 0
        assert _figures(study / f"seed-{seed}") == _figures(tmp_path / "saved" / f"alone-{seed}"), seed
    kept = [path.name for path in (tmp_path / "cache" / "ctranslate2" / "validation").iterdir()
            if not path.name.endswith(".lock")]
    assert len(kept) == 1, kept  # the last process's latest conversion: none is left behind by the others
