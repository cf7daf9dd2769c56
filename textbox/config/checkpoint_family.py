"""Which registry model (``--model``) a checkpoint is, read from the small files it holds, never from its weights.

``--model_path`` alone must pick the right family, so that the family's yaml layer (learning rate, schedule,
warm-up) applies as if ``--model`` had been given. The rules it applies (which model_type and which head is which
family) are rows of the family table, textbox.config.families; this module reads the files. Standard library only
(huggingface_hub is imported lazily, for a hub id): config validation and ``--help`` stay fast.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from textbox.config.families import (CAUSAL_HEADS, CAUSAL_LM, ENCODER_DECODER, ENCODER_HEADS, FAMILIES,
                                     FAMILY_OF_MODEL_TYPE, RNN, RNN_MODEL_TYPE, SEQ2SEQ, SEQ2SEQ_LM_HEADS, names_of)
from textbox.config.schema import ConfigValue

MODEL_CONFIG = "config.json"
ADAPTER_CONFIG = "adapter_config.json"  # peft (textbox/model/adapter_files.py)
BITFIT_CONFIG = "bitfit_config.json"  # BitFit (textbox/model/adapter_files.py)

# The --model names of each kind (textbox.config.families): which names accept which checkpoints.
SEQ2SEQ_FAMILIES = names_of(SEQ2SEQ)
DECODER_ONLY_FAMILIES = names_of(CAUSAL_LM)
PAIR_FAMILIES = names_of(ENCODER_DECODER)  # one builder: EncoderDecoderModel
RNN_FAMILIES = names_of(RNN)


class FamilyError(Exception):
    """The family cannot be read from the checkpoint; the message says what to give instead."""


@dataclass(frozen=True)
class Detected:
    """A checkpoint's family and the file that said so. ``architecture`` is the family of the weights'
    config.json when the family came from elsewhere (a run's config.yaml): e.g. transformer runs save BARTs."""

    family: str
    origin: str
    architecture: str | None = None


def family_of_model_config(config: Mapping[str, ConfigValue]) -> str | None:
    """The registry name for a config.json's contents, or None when nothing in it says."""
    model_type = str(config.get("model_type", "")).lower()
    if model_type == RNN_MODEL_TYPE:
        cell = str(config.get("cell", "")).lower()
        return cell if cell in RNN_FAMILIES else None
    if model_type in FAMILY_OF_MODEL_TYPE:
        return FAMILY_OF_MODEL_TYPE[model_type]
    architectures = [str(name) for name in config.get("architectures") or []]
    if config.get("is_encoder_decoder") is True:
        return "seq2seq"
    if any(name.endswith(CAUSAL_HEADS) for name in architectures):
        return "causal_lm"
    if any(name.endswith(SEQ2SEQ_LM_HEADS) for name in architectures):
        return "seq2seq"
    if any(name.endswith(ENCODER_HEADS) for name in architectures):
        return "bert2bert"
    return None


def accepts(model: str, family: str) -> bool:
    """Whether ``--model=<model>`` can load a checkpoint of ``family``: the same name, a generic family of the
    same kind, or transformer (BART from scratch) with a BART-architecture checkpoint; a family a --user_dir module
    registered accepts any (its builder refuses what it cannot load)."""
    model, family = model.lower(), family.lower()
    if model == family:
        return True
    entry = FAMILIES.get(model)
    if entry is not None and entry.registered:  # a --user_dir family: its own builder says what it loads
        return True
    if entry is not None and entry.group and entry.checkpoints == family:  # --model=mt5 with a t5-detected mT5
        return True
    if model == "seq2seq":
        return family in SEQ2SEQ_FAMILIES or family == "transformer"
    if model == "causal_lm":
        return family in DECODER_ONLY_FAMILIES
    if model in PAIR_FAMILIES:
        return family in PAIR_FAMILIES
    return {model, family} == {"transformer", "bart"}


def compatible(model: str, detected: Detected) -> bool:
    return accepts(model, detected.family) or (detected.architecture is not None
                                               and accepts(model, detected.architecture))


def detect(model_path: str, _depth: int = 0) -> Detected:
    """The family of a local checkpoint directory (config.json, or an adapter's base) or of a hub id (its
    config.json, downloaded or from the hub cache). Raises FamilyError saying what to give instead."""
    local = Path(model_path).expanduser()
    if local.is_dir():
        if (local / MODEL_CONFIG).is_file():
            return _from_model_config(_read_json(local / MODEL_CONFIG), str(local / MODEL_CONFIG), model_path)
        for name in (ADAPTER_CONFIG, BITFIT_CONFIG):
            if (local / name).is_file():
                return _from_adapter(_read_json(local / name), str(local / name), _depth)
        raise FamilyError(f"--model_path={model_path} holds no {MODEL_CONFIG} (nor {ADAPTER_CONFIG} / "
                          f"{BITFIT_CONFIG}), so its model family is unknown: give a directory written by "
                          f"save_pretrained, or name the family with --model=<name>")
    return _from_hub(model_path, _depth)


def _from_model_config(config: Mapping[str, object], origin: str, model_path: str) -> Detected:
    family = family_of_model_config(config)
    if family is None:
        raise FamilyError(f"--model_path={model_path}: {origin} (model_type {config.get('model_type')!r}, "
                          f"architectures {config.get('architectures')}) does not say which model family it is; "
                          f"give --model=seq2seq (encoder-decoder), --model=causal_lm (decoder-only) or "
                          f"--model=bert2bert (encoder)")
    return Detected(family, f"checkpoint {origin}")


def _from_adapter(record: Mapping[str, object], origin: str, depth: int) -> Detected:
    base = record.get("base_model_name_or_path")
    if not base or depth > 3:
        raise FamilyError(f"{origin} names no base model (base_model_name_or_path), so the model family is "
                          f"unknown: name it with --model=<name>")
    found = detect(str(base), depth + 1)
    return Detected(found.family, f"{origin} -> {found.origin}", found.architecture)


def _from_hub(repo_id: str, depth: int) -> Detected:
    """A hub id: its config.json (or adapter_config.json) through the hub cache, downloaded when online."""
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off")
    download: Callable[[str, str], str] | None
    try:
        from huggingface_hub import hf_hub_download
        download = hf_hub_download
    except ImportError:  # pragma: no cover - installed with transformers
        download = None
    reasons = []
    for name in (MODEL_CONFIG, ADAPTER_CONFIG):
        if download is None:
            break
        try:
            path = download(repo_id, name)
        except Exception as error:  # not found, offline, no network: each ends in the message below
            reasons.append(str(error).splitlines()[0] if str(error) else type(error).__name__)
            continue
        if name == MODEL_CONFIG:
            return _from_model_config(_read_json(Path(path)), f"{repo_id}/{MODEL_CONFIG}", repo_id)
        return _from_adapter(_read_json(Path(path)), f"{repo_id}/{ADAPTER_CONFIG}", depth)
    if offline:
        raise FamilyError(f"--model_path={repo_id} is not a local directory, and HF_HUB_OFFLINE is set (it is not "
                          f"in the hub cache either), so its config.json cannot be read to choose the model family: "
                          f"give --model=<family> (e.g. --model=bart), or a local directory written by "
                          f"save_pretrained")
    raise FamilyError(f"--model_path={repo_id} is not a local directory and its config.json could not be read from "
                      f"the Hugging Face Hub ({reasons[0] if reasons else 'huggingface_hub is not installed'}): "
                      f"check the id, or give --model=<family> or a local directory")


def _read_json(path: Path) -> dict[str, ConfigValue]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FamilyError(f"{path} is not a readable JSON file ({error}); the model family cannot be read from "
                          f"it: repair the checkpoint or name the family with --model=<name>") from error
    if not isinstance(loaded, dict):
        raise FamilyError(f"{path} must hold a JSON object; name the model family with --model=<name>")
    return loaded
