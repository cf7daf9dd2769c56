"""The dataset catalogue: ``--dataset=samsum`` gets TextBox 2.0's own copy of SAMSum when no local copy is there.

A catalogue entry is a configs/dataset/<name>.yaml whose ``catalogue`` key names the hub dataset repo and the
archive TextBox 2.0 published there (RUCAIBox/<Task>, <name>.tgz: {train,valid,test}.{src,tgt}, one example a line,
the form its settings were chosen for). The archive is fetched once through the hub cache (huggingface_hub: a
progress bar; with HF_HUB_OFFLINE=1 it is read from the cache) and unpacked under <cache_dir>/catalogue/<name>,
which the plain reader then reads, checked against the sizes and checksums of its files recorded when unpacked: a
damaged one is named in the log and unpacked again. A local copy wins: dataset/<name>/, or --data_path.

Config validation imports this module: huggingface_hub is imported only to look or fetch.
"""
from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path
from typing import Any, Callable, Mapping, TypedDict

from textbox.config.errors import DataError
from textbox.data.tables import original_problems
from textbox.utils import checksums, yaml_numbers
from textbox.utils.atomic import atomic_directory

FIELDS = ("repo", "file", "swap", "task", "licence", "original")
SPLITS = ("train", "valid", "test")
RECORD = "textbox_checksums.json"  # the unpacked files' sizes and checksums, written last (textbox.utils.checksums)


class CatalogueEntry(TypedDict, total=False):
    """A configs/dataset/<name>.yaml's ``catalogue`` value (FIELDS; entry_problems checks one as read)."""

    repo: str  # the hub dataset repo holding the archive
    file: str  # the archive in it
    swap: bool  # sources and targets swapped on unpacking
    task: str
    licence: str
    original: dict[str, object]  # the original hub dataset (textbox.data.tables.ORIGINAL_FIELDS)


def entry_problems(entry: Mapping[str, Any], where: str) -> list[str]:
    """A catalogue value names a repo and an archive; anything else it holds is a known field."""
    if not entry:
        return []
    problems = [f"{where}: unknown field {field!r} (fields: {', '.join(FIELDS)})" for field in entry
                if field not in FIELDS]
    problems += [f"{where} needs {field!r}" for field in ("repo", "file") if not isinstance(entry.get(field), str)]
    if entry.get("original"):
        problems += original_problems(entry["original"], where)
    return problems


def unpacked_directory(cache_dir: str | Path, name: str) -> Path:
    return Path(cache_dir) / "catalogue" / name


def download_command(entry: CatalogueEntry) -> str:
    """The command that puts the archive into the hub cache (then a run finds it offline too)."""
    return f"hf download {entry['repo']} {entry['file']} --repo-type dataset"


def _offline() -> bool:
    return any(os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")
               for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def cached_archive(entry: CatalogueEntry) -> Path | None:
    """The archive's path in the hub cache, or None when it has not been downloaded."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(entry["repo"], entry["file"], repo_type="dataset")
    return Path(found) if isinstance(found, str) else None


def availability_problem(name: str, entry: CatalogueEntry, cache_dir: str | Path) -> str | None:
    """Offline, an entry neither unpacked nor in the hub cache cannot be read: one message with the command."""
    if _has_splits(unpacked_directory(cache_dir, name)) or not _offline() or cached_archive(entry) is not None:
        return None
    return (f"dataset {name!r} ({entry['repo']}, {entry['file']}) is not on this machine and the hub is offline "
            f"(HF_HUB_OFFLINE / HF_DATASETS_OFFLINE): get it with `{download_command(entry)}` where there is "
            f"network (it fills the hub cache, ~/.cache/huggingface, which a copy brings here), or give "
            f"--data_path=<a local copy holding train/valid/test.src/.tgt>")


def ensure(name: str, entry: CatalogueEntry, cache_dir: str | Path, log: Callable[[str], None]) -> Path:
    """The directory of the entry's plain files: unpacked once (atomically) from the archive in the hub cache,
    downloading it first when online."""
    directory = unpacked_directory(cache_dir, name)
    if _has_splits(directory):
        damage = checksums.damage_of(directory, RECORD)
        if damage is None:
            return directory
        if not (directory / RECORD).exists() and _offline() and cached_archive(entry) is None:
            return directory  # unpacked before entries carried a record, its archive gone: read as it is
        log(f"the unpacked catalogue entry {directory} is damaged ({damage}); unpacking it again")
    problem = availability_problem(name, entry, cache_dir)
    if problem:
        raise DataError(problem)
    archive = cached_archive(entry)
    if archive is None:
        from huggingface_hub import hf_hub_download

        log(f"downloading {entry['file']} of hub dataset {entry['repo']} (TextBox 2.0's copy of {name!r})")
        try:
            archive = Path(hf_hub_download(entry["repo"], entry["file"], repo_type="dataset"))
        except Exception as error:  # network, missing file, hub errors: each ends in one message
            raise DataError(f"cannot download {entry['file']} of hub dataset {entry['repo']}: "
                            f"{str(error).splitlines()[0] if str(error) else type(error).__name__}; "
                            f"`{download_command(entry)}` fetches it, or give --data_path") from error
    log(f"unpacking {archive} into {directory}")
    with atomic_directory(directory) as staging:
        _unpack(archive, Path(staging), bool(entry.get("swap")))
        checksums.write_record(Path(staging), RECORD)
    return directory


def _has_splits(directory: Path) -> bool:
    return all((directory / f"{split}.{side}").is_file() for split in SPLITS for side in ("src", "tgt"))


def _unpack(archive: Path, staging: Path, swap: bool) -> None:
    """The archive's split files into ``staging`` (they may sit in a folder named after the dataset); with
    ``swap`` each split's .src and .tgt trade places."""
    extracted = staging / "archive"
    with tarfile.open(archive) as tar:
        tar.extractall(extracted, filter="data")  # no absolute paths, links out or devices
    found = sorted(extracted.rglob("train.src"), key=lambda path: len(path.parts))
    if not found:
        raise DataError(f"{archive} holds no train.src: not one of TextBox 2.0's dataset archives")
    root = found[0].parent
    for split in SPLITS:
        for side in ("src", "tgt"):
            source = root / f"{split}.{side}"
            if not source.is_file():
                present = ", ".join(sorted(path.name for path in root.iterdir()))
                raise DataError(f"{archive} lacks {split}.{side} (it has {present})")
            target_side = {"src": "tgt", "tgt": "src"}[side] if swap else side
            shutil.move(str(source), staging / f"{split}.{target_side}")
    shutil.rmtree(extracted)


def render_table(config_dir: str | Path) -> str:
    """docs/datasets.md's table: every catalogue entry under config_dir/dataset with its settings and source, the
    scoring and decoding it carries (TextBox 2.0's), the flags that give the field's standard figures instead, and
    what still differs from TextBox 2.0."""

    lines = ["| `--dataset` | task | hub source (TextBox 2.0's copy; the original) | settings | scoring and decoding "
             "(TextBox 2.0's) | the field's standard figures | licence | still differs from TextBox 2.0 |",
             "|---|---|---|---|---|---|---|---|"]
    for path in sorted((Path(config_dir) / "dataset").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        values = yaml_numbers.load(text) or {}
        entry = values.get("catalogue")
        if not entry:
            continue
        swap = " (sides swapped)" if entry.get("swap") else ""
        settings = [f"src_len {values.get('src_len')}, tgt_len {values.get('tgt_len')}",
                    f"metrics {', '.join(values.get('metrics', []))}",
                    f"best by {' + '.join(values.get('metrics_for_best_model', []))}",
                    *([f"prompt '{values['prefix_prompt'].strip()}'"] if values.get("prefix_prompt") else [])]
        notes = [line.removeprefix("# Note: ") for line in text.splitlines() if line.startswith("# Note: ")]
        original = entry.get("original")
        if original:
            subset = f" `{original['subset']}`" if original.get("subset") else ""
            swap += (f"; original (--data_format=hub): `{original['hub']}`{subset}, {original['source']} -> "
                     f"{original['target']}, licence {original['licence']}")
        lines.append(f"| `{path.stem}` | {entry.get('task', '')} | `{entry['repo']}` `{entry['file']}`{swap} | "
                     f"{'; '.join(settings)} | {_scoring(values)} | {_standard(values)} | "
                     f"{entry.get('licence', '')} | {' '.join(notes) or '-'} |")
    return "\n".join(lines)


_CASED_METRICS = ("bleu", "chrf", "chrf+", "chrf++", "ter", "self_bleu")  # their figures change with case
_SPLITS = {"period": "ROUGE-L over files2rouge's sentences (' . ' of NLTK tokens)",
           "punkt": "ROUGE-L over Punkt sentences", "newline": "ROUGE-L over lines"}


def _scoring(values: dict[str, Any]) -> str:
    """The scoring and decoding keys an entry sets, in words."""
    metrics = values.get("metrics", [])
    said = ["lower-cased" if values.get("lower_evaluation") else "cased"]
    if "bleu" in metrics and values.get("bleu_type", "sacrebleu") != "sacrebleu":
        options = [f"{key} {values[key]}" for key in ("corpus_bleu", "smoothing_function") if key in values]
        said.append(f"BLEU by {values['bleu_type']}" + (f" ({', '.join(options)})" if options else ""))
    if "rouge" in metrics and values.get("rouge_sentence_split", "none") != "none":
        said.append(_SPLITS[values["rouge_sentence_split"]])
    if "meteor" in metrics:
        said.append("METEOR 1.5" + ("" if values.get("corpus_meteor", True) else " (mean of sentence scores)")
                    if values.get("meteor_type") == "pycocoevalcap" else "NLTK's METEOR")
    if "cider" in metrics:
        said.append("CIDEr on NLTK tokens" if values.get("coco_tokenize") == "nltk" else "CIDEr on PTB tokens")
    decoding = values.get("generation_kwargs") or {}
    if decoding.get("do_sample"):
        said.append(f"sampling (top-p {decoding.get('top_p')}, temperature {decoding.get('temperature')})")
    elif decoding:
        said.append(f"beam {decoding.get('num_beams', 1)}, no repeated {decoding.get('no_repeat_ngram_size')}-gram"
                    + (", early stopping" if decoding.get("early_stopping") else ""))
    return "; ".join(said)


def _standard(values: dict[str, Any]) -> str:
    """The flags that turn an entry's figures into the field's standard ones (or that they are already)."""
    metrics = values.get("metrics", [])
    flags = []
    if "bleu" in metrics and values.get("bleu_type", "sacrebleu") != "sacrebleu":
        resets = " ".join(f"--{key}={'False' if key == 'corpus_bleu' else 0}" for key in ("corpus_bleu",
                                                                                           "smoothing_function")
                          if key in values)
        flags.append(f"`--bleu_type=sacrebleu{' ' + resets if resets else ''}` (sacrebleu's corpus BLEU)")
    if values.get("lower_evaluation") and set(metrics) & set(_CASED_METRICS):
        flags.append("`--lower_evaluation=False` (cased, as sacrebleu's default)")
    if "rouge" in metrics and values.get("rouge_sentence_split", "none") != "punkt":
        flags.append("`--rouge_sentence_split=punkt` (ROUGE-Lsum as Hugging Face's run_summarization)")
    if "meteor" in metrics and values.get("meteor_type", "nltk") != "pycocoevalcap":
        flags.append("`--meteor_type=pycocoevalcap` (METEOR 1.5)")
    if "cider" in metrics and values.get("coco_tokenize") == "nltk":
        flags.append("`--coco_tokenize=ptb` (coco-caption's CIDEr)")
    return "; ".join(flags) or "the same"
