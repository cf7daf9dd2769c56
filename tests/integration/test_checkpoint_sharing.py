"""A checkpoint that stands alone: checkpoint_best of a beam-search run decodes with a plain transformers
``generate(**inputs)`` (no arguments) as the run did, and on CTranslate2 as on transformers; its model card; the
push to the hub, up to the hub's API (its methods replaced); the CTranslate2 export. One run for all."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_in_process
from textbox.decoding.detokenize import one_line

pytestmark = pytest.mark.slow

GENERATION = {"num_beams": 3, "early_stopping": True, "length_penalty": 0.6}  # both engines decode it alike


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A short (under-trained: beam search and greedy decoding then differ) beam-search run."""
    work = tmp_path_factory.mktemp("sharing")
    data = make_copy_dataset(work / "copy")
    args = [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--epochs=15", "--filename=run",
            f"--generation_kwargs={GENERATION}", "--metrics=['bleu']", "--valid_strategy=epoch",
            "--decoding_backend=transformers"]
    assert run_in_process(args, cwd=work) == 0
    return work / "saved" / "run"


def _plain_generate(checkpoint: Path, sources: list[str], **arguments: object) -> list[str]:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(checkpoint).eval()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    with torch.no_grad():
        rows = [model.generate(**tokenizer(source, return_tensors="pt"), **arguments)[0] for source in sources]
    return [one_line(tokenizer.decode(row, skip_special_tokens=True)) for row in rows]


def test_checkpoint_best_alone_decodes_as_the_run_did_on_both_engines(run: Path, tmp_path: Path):
    best = run / "checkpoint_best"
    sources = (run.parent.parent / "copy" / "test.src").read_text().splitlines()
    generated = (run / "generation.txt").read_text().splitlines()
    assert _plain_generate(best, sources) == generated and any(generated)
    assert _plain_generate(best, sources, num_beams=1) != generated  # the beams matter: greedy differs

    common = [f"--model_path={best}", "--do_train=False", "--tracker=none", f"--cache_dir={tmp_path / 'cache'}"]
    assert run_in_process([*common, "--decoding_backend=ctranslate2", "--filename=ct2"], cwd=run.parent.parent) == 0
    tested = run.parent / "ct2"
    assert "decoding with ctranslate2: --decoding_backend=ctranslate2" in (tested / "project.log").read_text()
    assert (tested / "generation.txt").read_text().splitlines() == generated
