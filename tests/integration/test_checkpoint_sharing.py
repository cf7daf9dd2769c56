"""A checkpoint that stands alone: checkpoint_best of a beam-search run decodes with a plain transformers
``generate(**inputs)`` (no arguments) as the run did, and on CTranslate2 as on transformers; its model card; the
push to the hub, up to the hub's API (its methods replaced); the CTranslate2 export. One run for all."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.helpers import TINY_MODEL_ARGS, make_copy_dataset, run_in_process
from textbox.decoding.detokenize import one_line

pytestmark = pytest.mark.slow

GENERATION = {"num_beams": 3, "early_stopping": True, "length_penalty": 0.6}  # both engines decode it alike


@pytest.fixture(scope="module")
def pushed(tmp_path_factory) -> tuple[Path, dict[str, object]]:
    """A short (under-trained: beam search and greedy decoding then differ) beam-search run with --push_to_hub,
    online with a token as far as the run can tell, the hub's API replaced: what it was handed is recorded."""
    from huggingface_hub import HfApi, RepoUrl

    work = tmp_path_factory.mktemp("sharing")
    data = make_copy_dataset(work / "copy")
    calls: dict[str, object] = {}

    def create_repo(self, repo_id, **options):
        calls["create_repo"] = (repo_id, options)
        return RepoUrl(f"https://huggingface.co/{repo_id}")

    def upload_folder(self, **options):
        calls["upload_folder"] = options
        calls["files"] = sorted(path.name for path in Path(options["folder_path"]).iterdir())

    args = [*TINY_MODEL_ARGS, f"--data_path={data}", "--dataset=copy", "--epochs=15", "--filename=run",
            f"--generation_kwargs={GENERATION}", "--metrics=['bleu']", "--valid_strategy=epoch",
            "--decoding_backend=transformers", "--push_to_hub=True", "--hub_model_id=me/copy-model",
            "--hub_private=True", "--max_save=3"]  # max_save=3: one checkpoint-<step> kept too
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "0")  # huggingface_hub itself stays offline: it read the variable on import
        patch.setenv("HF_TOKEN", "hf_not_a_real_token")
        patch.setattr(HfApi, "create_repo", create_repo)
        patch.setattr(HfApi, "upload_folder", upload_folder)
        assert run_in_process(args, cwd=work) == 0
    return work / "saved" / "run", calls


@pytest.fixture(scope="module")
def run(pushed) -> Path:
    return pushed[0]


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
    steps = list(run.glob("checkpoint-*"))
    assert len(steps) == 1 and json.loads((steps[0] / "generation_config.json").read_text())["num_beams"] == 3

    common = [f"--model_path={best}", "--do_train=False", "--tracker=none", f"--cache_dir={tmp_path / 'cache'}"]
    assert run_in_process([*common, "--decoding_backend=ctranslate2", "--filename=ct2"], cwd=run.parent.parent) == 0
    tested = run.parent / "ct2"
    assert "decoding with ctranslate2: --decoding_backend=ctranslate2" in (tested / "project.log").read_text()
    assert (tested / "generation.txt").read_text().splitlines() == generated


def test_push_to_hub_creates_the_repository_and_uploads_checkpoint_best_with_its_card(pushed):
    run, calls = pushed
    assert calls["create_repo"] == ("me/copy-model", {"private": True, "repo_type": "model", "exist_ok": True})
    upload = calls["upload_folder"]
    assert (upload["repo_id"], Path(upload["folder_path"]), upload["repo_type"]) == (
        "me/copy-model", run / "checkpoint_best", "model")
    assert {"README.md", "config.json", "generation_config.json", "model.safetensors", "tokenizer.json"} <= set(
        calls["files"])
    assert "pushed " in (run / "project.log").read_text()


def test_the_model_card_has_the_runs_figures_scoring_and_versions(run: Path):
    import yaml

    card = (run / "checkpoint_best" / "README.md").read_text()
    _, front_text, body = card.split("---\n", 2)
    front = yaml.safe_load(front_text)
    results = json.loads((run / "results.json").read_text())
    assert (front["library_name"], front["datasets"], front["metrics"]) == ("transformers", ["copy"], ["bleu"])
    assert "textbox" in front["tags"]
    figures = {entry["name"]: entry["value"] for entry in front["model-index"][0]["results"][0]["metrics"]}
    assert figures == results["test"] and figures
    assert results["metric_details"]["bleu"]["signature"] in body  # how the figures were scored
    assert f"| transformers | {results['versions']['transformers']} |" in body
    assert '"num_beams": 3' in body and "| tgt_len | `16` |" in body


def _translated(directory: Path, sources: list[str], arguments: dict) -> list[str]:
    import ctranslate2
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)  # the exported tokenizer files
    translator = ctranslate2.Translator(str(directory), device="cpu", intra_threads=1)
    batch = [tokenizer.convert_ids_to_tokens(tokenizer(source).input_ids) for source in sources]
    results = translator.translate_batch(batch, **arguments)
    return [one_line(tokenizer.decode(tokenizer.convert_tokens_to_ids(result.hypotheses[0]), skip_special_tokens=True))
            for result in results]


def test_the_export_decodes_on_ctranslate2_as_the_checkpoints_generate(run: Path, tmp_path: Path, capsys):
    import shutil

    from textbox.export import main

    sources = (run.parent.parent / "copy" / "test.src").read_text().splitlines()
    greedy = tmp_path / "greedy"  # settings one CTranslate2 call reproduces: generation_arguments.json is written
    shutil.copytree(run / "checkpoint_best", greedy)
    settings = json.loads((greedy / "generation_config.json").read_text())
    settings.update(num_beams=1, early_stopping=None)
    (greedy / "generation_config.json").write_text(json.dumps(settings))
    assert main([f"--model_path={greedy}", f"--output={tmp_path / 'ct2'}"]) == 0
    arguments = json.loads((tmp_path / "ct2" / "generation_arguments.json").read_text())
    expected = _plain_generate(greedy, sources)
    assert _translated(tmp_path / "ct2", sources, arguments) == expected and any(expected)

    # the run's own beam search under forced_eos_token_id: exported, but no plain call reproduces it (said so)
    assert main([f"--model_path={run / 'checkpoint_best'}", f"--output={tmp_path / 'beams'}",
                 "--quantization=int8"]) == 0
    assert "generation_arguments.json not written" in capsys.readouterr().out
    assert not (tmp_path / "beams" / "generation_arguments.json").exists()
    assert any(_translated(tmp_path / "beams", sources, {"beam_size": 3}))


@pytest.mark.parametrize("arguments, problem", [
    (["--model_path={missing}", "--output={out}"], "no config.json there"),
    (["--model_path={best}", "--output={best}"], "exists: give a new directory"),
    (["--model_path={best}", "--output={out}", "--quantization=int4"], "--quantization='int4' is not one of"),
    (["--model_path={best}"], "--output missing"),
])
def test_bad_export_input_is_one_error_line_and_exit_2(run: Path, tmp_path: Path, capsys, arguments, problem):
    from textbox.export import main

    paths = {"missing": tmp_path / "missing", "out": tmp_path / "out", "best": run / "checkpoint_best"}
    assert main([argument.format(**paths) for argument in arguments]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and problem in error and error.count("\n") == 1
    assert not (tmp_path / "out").exists()
