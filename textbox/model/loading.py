"""What the model builders share: clear errors for paths that cannot be loaded, config overrides that
refuse typos, and token ids written where both training and ``generate`` read them."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

import torch
from transformers import AutoConfig, PretrainedConfig, PreTrainedModel

from textbox.config.errors import TextBoxUserError

Loaded = TypeVar("Loaded")


def from_pretrained(load: Callable[..., Loaded], model_path: str, **kwargs: Any) -> Loaded:
    """Call a ``from_pretrained`` and turn 'not found / offline' into a message that says what to do."""
    from textbox.model.efficient import is_efficient_checkpoint, load_efficient

    if is_efficient_checkpoint(model_path):  # an adapter or BitFit biases: loaded onto their base model
        return load_efficient(load, model_path, **kwargs)
    local = Path(model_path).expanduser()
    if not local.exists() and _looks_like_a_path(model_path):
        raise TextBoxUserError(f"--model_path={model_path}: directory {local} does not exist; give a directory "
                               f"written by save_pretrained, or a Hugging Face Hub id such as facebook/bart-base")
    if local.is_dir() and not (local / "config.json").is_file():
        raise TextBoxUserError(f"--model_path={model_path} has no config.json: give a directory written by "
                               f"save_pretrained, e.g. a run's saved/<run>/checkpoint_best")
    try:
        return load(model_path, **kwargs)
    except OSError as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        if local.exists():
            raise TextBoxUserError(f"--model_path={model_path}: cannot load it ({reason}); give a directory "
                                   f"written by save_pretrained (config.json, weights, tokenizer files)") from error
        raise TextBoxUserError(
            f"--model_path={model_path} is not a local directory and could not be loaded from the Hugging Face "
            f"Hub ({reason}); give a local model directory, or check the id and allow network access "
            f"(unset HF_HUB_OFFLINE) so that it can be downloaded") from error


def _looks_like_a_path(model_path: str) -> bool:
    """Hub ids are 'name' or 'owner/name'; anything else can only have meant a local directory."""
    return model_path.startswith((".", "/", "~")) or model_path.count("/") > 1


def load_config(model_path: str, overrides: Mapping[str, Any]) -> PretrainedConfig:
    """The model config at ``model_path`` with ``--config_kwargs`` applied; an unknown key is an error."""
    config, unused = from_pretrained(AutoConfig.from_pretrained, model_path, return_unused_kwargs=True, **overrides)
    reject_unknown_config_kwargs(unused, config.model_type)
    return config


def reject_unknown_config_kwargs(unknown: Mapping[str, Any], model_type: str) -> None:
    """transformers would silently drop these: a typo must not leave a setting at its default."""
    if unknown:
        raise TextBoxUserError(f"--config_kwargs: {', '.join(sorted(unknown))} "
                               f"{'is not a setting' if len(unknown) == 1 else 'are not settings'} "
                               f"of a {model_type!r} model config; check the spelling")


def set_special_token_ids(model: PreTrainedModel, **ids: int | None) -> None:
    """Write e.g. ``pad_token_id=1`` into ``model.config`` (read when training shifts labels) and
    ``model.generation_config`` (read by ``generate``); both are saved, so a reloaded model decodes alike."""
    for name, value in ids.items():
        setattr(model.config, name, value)
    model.generation_config.update(**ids)


def set_generation_length(model: PreTrainedModel, max_new_tokens: int) -> None:
    """The checkpoint's default length (``generation_kwargs`` still override it per call)."""
    model.generation_config.max_new_tokens = max_new_tokens


def count_parameters(model: torch.nn.Module) -> tuple[int, int]:
    """(trainable, total) parameter counts; shared weights (tied embeddings) are counted once."""
    parameters = list(model.parameters())  # .parameters() yields each shared tensor once
    trainable = sum(p.numel() for p in parameters if p.requires_grad)
    return trainable, sum(p.numel() for p in parameters)
