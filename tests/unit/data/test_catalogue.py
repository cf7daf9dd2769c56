"""The dataset catalogue: every yaml under configs/ validates; --dataset=<name> reads TextBox 2.0's archive from a
hub-cache copy offline (the real huggingface_hub lookup, no mock), swaps sides for the reverse translation direction,
prefers a local copy, and says the one command that gets data that is absent offline."""
from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT
from tests.helpers import fresh_python, missing_nltk_data, offline_env
from textbox.checks import load_checked_config
from textbox.config import ConfigError
from textbox.config.loader import resolve_config
from textbox.data.builtin import BUILTIN_DATASETS
from textbox.data.catalogue import render_table

CONFIGS = PROJECT_ROOT / "configs"
ENTRIES = sorted(path.stem for path in (CONFIGS / "dataset").glob("*.yaml") if path.stem not in BUILTIN_DATASETS)


@pytest.mark.parametrize("path", sorted(CONFIGS.rglob("*.yaml")), ids=lambda path: str(path.relative_to(CONFIGS)))
def test_every_yaml_under_configs_loads_with_known_keys_and_types(path: Path):
    if "accelerate" in path.parts:
        pytest.skip("accelerate's own config files, read by accelerate launch")
    argv = [f"--config_files={path}"]
    if path.parent.name == "model":
        argv.append(f"--model={path.stem}")
    resolution = resolve_config(argv)
    assert resolution.problems == [], resolution.problems


@pytest.mark.parametrize("name", ENTRIES)
def test_every_catalogue_entry_validates_on_a_local_copy(name: str, data_dir: Path):
    try:
        config = load_checked_config([f"--dataset={name}", f"--data_path={data_dir}", "--model=bart",
                                      "--model_path=facebook/bart-base"])
    except ConfigError as error:
        assert all(missing_nltk_data(problem) for problem in error.problems), error.problems
        return
    assert config.catalogue["repo"].startswith("RUCAIBox/") and config.catalogue["file"].endswith(".tgz")
    assert config.metrics and config.metrics_for_best_model


SAMPLING = {"num_beams": 1, "do_sample": True, "top_p": 0.9, "temperature": 0.7}  # TextBox 2.0's story generation
TEXTBOX_DECODING = {"num_beams": 5, "no_repeat_ngram_size": 3, "early_stopping": True}  # its overall.yaml
TEXTBOX_ROUGE_SPLIT = {  # files2rouge (its default rouge_type) -> period; rouge-score -> punkt; the others split none
    **dict.fromkeys(("cnndm", "samsum", "xsum"), "period"),
    **dict.fromkeys(("dart", "e2e", "sgd", "totto", "webnlg2", "wia", "wle"), "punkt")}


@pytest.mark.parametrize("name", ENTRIES)
def test_every_entry_scores_and_decodes_as_textbox_did(name: str, data_dir: Path):
    config = resolve_config([f"--dataset={name}", f"--data_path={data_dir}"]).config
    assert config.lower_evaluation is not name.startswith("gyafc")  # its style-transfer yamls keep case
    assert config.generation_kwargs == (SAMPLING if name in ("cmv", "roc", "wikip", "wp") else TEXTBOX_DECODING)
    if "rouge" in config.metrics:
        assert config.rouge_sentence_split == TEXTBOX_ROUGE_SPLIT.get(name, "none")
    if "cider" in config.metrics:
        assert config.coco_tokenize == "nltk"
    if "meteor" in config.metrics:  # METEOR 1.5 (its default) but where a yaml chose NLTK's
        assert config.meteor_type == ("nltk" if name == "coqaqg" else "pycocoevalcap")
        assert config.corpus_meteor is (name not in ("paranmt", "quora"))
    textbox_bleu = {**dict.fromkeys(("cmv", "roc", "wikip", "wp", "dd", "pc"), "nltk"),
                    **dict.fromkeys(("cg", "coqaqg", "da", "squadqg"), "pycocoevalcap"),
                    **dict.fromkeys(("webnlg", "wikibio"), "mt-eval"),
                    **dict.fromkeys(("gyafc_em", "gyafc_fr", "paranmt", "quora"), "multi-bleu")}
    if "bleu" in config.metrics:
        assert config.bleu_type == textbox_bleu.get(name, "sacrebleu")
        assert (config.corpus_bleu, config.smoothing_function) == ((name in ("cmv", "roc", "wikip", "wp")),
                                                                   7 if name in ("dd", "pc") else 0)


def test_docs_datasets_md_is_the_catalogue():
    assert render_table(CONFIGS) in (PROJECT_ROOT / "docs" / "datasets.md").read_text()
    assert render_table(CONFIGS).count("\n| `") == len(ENTRIES)


def _archive(path: Path, folder: str, sides: dict[str, list[str]]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for split in ("train", "valid", "test"):
            for side, lines in sides.items():
                data = "".join(f"{split} {line}\n" for line in lines).encode()
                info = tarfile.TarInfo(f"{folder}/{split}.{side}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def _hub_cache(root: Path, repo: str, filename: str, folder: str, sides: dict[str, list[str]]) -> Path:
    """huggingface_hub's cache layout: datasets--<org>--<name>/{refs/main, snapshots/<commit>/<file>}."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo_dir = root / f"datasets--{repo.replace('/', '--')}"
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / "main").write_text(commit)
    snapshot = repo_dir / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    _archive(snapshot / filename, folder, sides)
    return root


_READ = """
import json, sys
from textbox.checks import load_checked_config
from textbox.data.readers import read_splits
config = load_checked_config(sys.argv[1:])
splits = read_splits(config, log=lambda line: print(line, file=sys.stderr))
print(json.dumps({name: [split.sources, split.targets] for name, split in splits.items()}))
"""


def _run(args: list[str], cwd: Path, hub_cache: Path) -> subprocess.CompletedProcess:
    return fresh_python(_READ, *args, cwd=cwd, env=offline_env(HF_HUB_CACHE=str(hub_cache)), timeout=300)


def test_a_catalogue_entry_is_read_offline_from_the_hub_cache(tmp_path: Path):
    cache = _hub_cache(tmp_path / "hub", "RUCAIBox/Summarization", "samsum.tgz", "samsum",
                       {"src": ["Amy: hi Bob: hello"], "tgt": ["Amy greets Bob."]})
    result = _run(["--dataset=samsum", "--model=bart", "--model_path=x", f"--cache_dir={tmp_path / 'cache'}"],
                  tmp_path, cache)
    assert result.returncode == 0, result.stderr[-2000:]
    splits = json.loads(result.stdout.splitlines()[-1])
    assert splits["train"] == [["train Amy: hi Bob: hello"], [["train Amy greets Bob."]]]
    assert splits["test"][0] == ["test Amy: hi Bob: hello"]
    assert (tmp_path / "cache" / "catalogue" / "samsum" / "valid.tgt").is_file()
    assert "unpacking" in result.stderr


def test_the_reverse_translation_direction_reads_the_pair_archive_with_sides_swapped(tmp_path: Path):
    cache = _hub_cache(tmp_path / "hub", "RUCAIBox/Translation", "wmt16-ro-en.tgz", "wmt16-ro-en",
                       {"src": ["buna ziua"], "tgt": ["good day"]})
    forward = _run(["--dataset=wmt16-ro-en", f"--cache_dir={tmp_path / 'a'}"], tmp_path, cache)
    reverse = _run(["--dataset=wmt16-en-ro", f"--cache_dir={tmp_path / 'b'}"], tmp_path, cache)
    assert forward.returncode == reverse.returncode == 0, forward.stderr[-2000:] + reverse.stderr[-2000:]
    assert json.loads(forward.stdout.splitlines()[-1])["test"] == [["test buna ziua"], [["test good day"]]]
    assert json.loads(reverse.stdout.splitlines()[-1])["test"] == [["test good day"], [["test buna ziua"]]]


def test_data_absent_offline_is_one_message_with_the_command_that_gets_it(tmp_path: Path):
    result = _run(["--dataset=xsum", f"--cache_dir={tmp_path / 'cache'}"], tmp_path, tmp_path / "empty")
    assert result.returncode != 0
    assert "`hf download RUCAIBox/Summarization xsum.tgz --repo-type dataset`" in result.stderr
    assert result.stderr.count("hf download") == 1


def test_a_local_copy_wins_over_the_catalogue(tmp_path: Path, data_dir: Path):
    result = _run(["--dataset=samsum", f"--data_path={data_dir}", f"--cache_dir={tmp_path / 'cache'}"], tmp_path,
                  tmp_path / "empty")
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.splitlines()[-1])["train"] == [["a b"], [["c d"]]]
    assert not (tmp_path / "cache" / "catalogue").exists()


def test_an_unpacked_entry_damaged_in_place_is_unpacked_again(tmp_path: Path):
    """A file of the unpacked copy overwritten at the same size (a bad sector, an editor) was read as it was: other
    examples, or a non-UTF-8 error naming a file in the cache. Its checksum, recorded when it was unpacked, is
    checked when it is read: the entry is named and unpacked again from the archive."""
    cache = _hub_cache(tmp_path / "hub", "RUCAIBox/Summarization", "samsum.tgz", "samsum",
                       {"src": ["Amy: hi Bob: hello"], "tgt": ["Amy greets Bob."]})
    args = ["--dataset=samsum", "--model=bart", "--model_path=x", f"--cache_dir={tmp_path / 'cache'}"]
    first = _run(args, tmp_path, cache)
    assert first.returncode == 0, first.stderr[-2000:]
    unpacked = tmp_path / "cache" / "catalogue" / "samsum"
    source = unpacked / "train.src"
    source.write_bytes(source.read_bytes().replace(b"hi", b"\xff\xfe"))
    again = _run(args, tmp_path, cache)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"the unpacked catalogue entry {unpacked} is damaged (train.src does not hold the bytes written" \
        in again.stderr
    assert json.loads(again.stdout.splitlines()[-1])["train"] == json.loads(first.stdout.splitlines()[-1])["train"]
    assert source.read_text() == "train Amy: hi Bob: hello\n"
