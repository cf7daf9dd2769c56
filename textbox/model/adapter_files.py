"""The files of a parameter-efficiently tuned model: what checkpoint_best holds of it, how such a checkpoint is
recognised, what it records (``checkpoint_record``), and how its trained parameters go back onto a base model.

``save_model_files`` writes only what was trained (peft's adapter files, or BitFit's biases) beside the base
model's path; with ``efficient_unfreeze_model=True`` the whole model: LoRA/IA3 merged into a plain model, BitFit
as a plain model, prompt methods as the full base model in ``base_model/`` plus the adapter. textbox.model.loading
sends any builder's load of such a checkpoint to ``attach_trained_parameters``. Applying a method to a built
model is textbox.model.efficient's job; this module is apart from it so that loading (which both need) imports
neither back.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textbox.config.checkpoint_family import ADAPTER_CONFIG, BITFIT_CONFIG  # written by peft / by _save_bitfit
from textbox.config.errors import TextBoxUserError
from textbox.model.built_model import EfficientRecord
from textbox.model.quantization import recorded

BITFIT_WEIGHTS = "bitfit_model.safetensors"  # BITFIT_CONFIG: {"method", "base_model_name_or_path", "parameters"}
BASE_SUBDIR = "base_model"  # the trained base of a prompt method with efficient_unfreeze_model=True
GENERATION_CONFIG = "generation_config.json"
PEFT_TYPES = {"LORA": "lora", "PREFIX_TUNING": "prefix-tuning", "PROMPT_TUNING": "prompt-tuning",
              "P_TUNING": "p-tuning", "IA3": "ia3"}  # peft's names -> TextBox's
_PROMPT_TYPES = ("PREFIX_TUNING", "PROMPT_TUNING", "P_TUNING")
_MERGEABLE = ("lora", "ia3")


# --- saving ---------------------------------------------------------------------------------------
def save_model_files(model: Any, directory: Path, efficient: EfficientRecord | None) -> None:
    """What checkpoint_best holds: the whole model (save_pretrained), or only what the efficient method the model
    carries (``efficient``, from its BuiltModel record) trained, with how its base was quantised (if it was)."""
    directory = Path(directory)
    _save_trained_files(model, directory, efficient)
    if efficient is not None and efficient.quantization is not None:
        efficient.quantization.save(directory)  # how to quantise the base again (textbox.model.quantization)


def _save_trained_files(model: Any, directory: Path, efficient: EfficientRecord | None) -> None:
    if efficient is None:
        model.save_pretrained(directory)
    elif efficient.method == "bitfit":
        if efficient.unfreeze:
            model.save_pretrained(directory)
        else:
            _save_bitfit(model, directory, efficient.base_model_path)
    elif not efficient.unfreeze:
        model.save_pretrained(directory)  # peft: adapter_config.json + adapter_model.safetensors
        model.generation_config.save_pretrained(directory)
    elif efficient.method in _MERGEABLE:
        _save_merged(model, directory)
    else:
        model.get_base_model().save_pretrained(directory / BASE_SUBDIR)
        model.save_pretrained(directory)
        model.generation_config.save_pretrained(directory)


def _save_bitfit(model: Any, directory: Path, base_path: str | None) -> None:
    from safetensors.torch import save_file

    trained = {name: parameter.detach().cpu().contiguous()
               for name, parameter in model.named_parameters() if parameter.requires_grad}
    directory.mkdir(parents=True, exist_ok=True)
    save_file(trained, str(directory / BITFIT_WEIGHTS))
    record = {"method": "bitfit", "base_model_name_or_path": base_path, "parameters": sorted(trained)}
    (directory / BITFIT_CONFIG).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    model.generation_config.save_pretrained(directory)


def _save_merged(model: Any, directory: Path) -> None:
    """LoRA/IA3 folded into the base weights, saved as a plain model; the live model is left bit-identical."""
    import torch

    base = model.get_base_model()
    prefix = model.base_model.prefix  # "lora_" / "ia3_": the adapter's own parameters
    touched = {name: parameter.detach().clone() for name, parameter in base.named_parameters()
               if ".base_layer." in name}
    model.merge_adapter()
    try:
        state = {name.replace(".base_layer", ""): tensor for name, tensor in base.state_dict().items()
                 if prefix not in name}
        base.save_pretrained(directory, state_dict=state)
    finally:
        model.unmerge_adapter()
        with torch.no_grad():  # unmerging rounds; the saved copies restore the exact weights
            for name, parameter in base.named_parameters():
                if name in touched:
                    parameter.copy_(touched[name])


# --- recognising ----------------------------------------------------------------------------------
def is_efficient_checkpoint(path: str | Path | None) -> bool:
    """A directory holding a peft adapter or BitFit biases (and a record of its base model)."""
    if not path:
        return False
    directory = Path(path).expanduser()
    return (directory / ADAPTER_CONFIG).is_file() or (directory / BITFIT_CONFIG).is_file()


def base_model_path(path: str | Path) -> str:
    """Where the checkpoint's base model loads from: its own base_model/ or the recorded path."""
    directory = Path(path).expanduser()
    if (directory / BASE_SUBDIR / "config.json").is_file():
        return str(directory / BASE_SUBDIR)
    record = directory / (ADAPTER_CONFIG if (directory / ADAPTER_CONFIG).is_file() else BITFIT_CONFIG)
    base = json.loads(record.read_text(encoding="utf-8")).get("base_model_name_or_path")
    if not base:
        raise TextBoxUserError(f"--model_path={path}: {record.name} records no base model "
                               f"(base_model_name_or_path); set it to the model the adapter was trained on")
    return base


def checkpoint_record(path: str | Path | None) -> EfficientRecord | None:
    """What an efficient checkpoint at ``path`` holds, as the record of a model loaded from it (None otherwise)."""
    if path is None or not is_efficient_checkpoint(path):
        return None
    directory = Path(path).expanduser()
    method = "bitfit"
    if (directory / ADAPTER_CONFIG).is_file():
        peft_type = json.loads((directory / ADAPTER_CONFIG).read_text(encoding="utf-8")).get("peft_type")
        method = PEFT_TYPES.get(str(peft_type), "adapter")

    return EfficientRecord(method, (directory / BASE_SUBDIR).is_dir(), base_model_path(directory),
                           recorded(directory))


# --- attaching ------------------------------------------------------------------------------------
def attach_trained_parameters(model: Any, path: str | Path) -> Any:
    """The base ``model`` with the checkpoint's adapter or biases, trainable as when they were saved."""
    from transformers import GenerationConfig

    directory = Path(path).expanduser()
    if (directory / ADAPTER_CONFIG).is_file():
        from peft import PeftModel

        # peft loads prompt methods frozen only; their prompt encoder is made trainable again below
        prompt_learning = json.loads((directory / ADAPTER_CONFIG).read_text(encoding="utf-8")).get("peft_type") \
            in _PROMPT_TYPES
        model = PeftModel.from_pretrained(model, str(directory), is_trainable=not prompt_learning)
        if prompt_learning:
            for parameter in model.prompt_encoder.parameters():
                parameter.requires_grad_(True)
    else:
        model = _attach_bitfit(model, directory)
    if (directory / GENERATION_CONFIG).is_file():
        inner_model(model).generation_config = GenerationConfig.from_pretrained(directory)
    return model


def _attach_bitfit(model: Any, directory: Path) -> Any:
    import torch
    from safetensors.torch import load_file

    trained = load_file(str(directory / BITFIT_WEIGHTS))
    parameters = dict(model.named_parameters())
    missing = sorted(set(trained) - set(parameters))
    if missing:
        raise TextBoxUserError(f"--model_path={directory}: its BitFit parameters do not fit the base model "
                               f"{base_model_path(directory)} (no parameter {missing[0]!r})")
    with torch.no_grad():
        for name, parameter in parameters.items():
            if name in trained:
                parameter.copy_(trained[name])
            parameter.requires_grad_(name in trained)
    return model


def inner_model(model: Any) -> Any:
    """The transformers model itself (a PeftModel's attribute writes would stay on the wrapper)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model
