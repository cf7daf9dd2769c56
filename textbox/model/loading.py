"""What the model builders share: clear errors for paths that cannot be loaded, config overrides that
refuse typos, and token ids written where both training and ``generate`` read them. An efficient checkpoint
(an adapter or BitFit biases, textbox.model.adapter_files) loads onto its base model here, whichever
builder asks, and ``load_saved_model`` reloads the Trainer's checkpoint_best."""
from __future__ import annotations

import contextlib
import inspect
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, TypeVar

import torch
import transformers
from transformers import (AutoConfig, AutoTokenizer, GenerationConfig, PreTrainedModel, PreTrainedTokenizerBase,
                          PretrainedConfig)
from transformers.models.auto.configuration_auto import CONFIG_MAPPING, CONFIG_MAPPING_NAMES
from huggingface_hub.errors import StrictDataclassFieldValidationError
from transformers.tokenization_utils_base import INIT_TOKENIZER_DOCSTRING

from textbox.config.errors import TextBoxUserError
from textbox.model.adapter_files import (GENERATION_CONFIG, attach_trained_parameters, base_model_path,
                                         inner_model, is_efficient_checkpoint)
from textbox.model.files import damaged_files as unreadable
from textbox.model.quantization import Quantization, load_settings, prepare_for_training, recorded
from textbox.utils.paths import missing_local_path
from textbox.utils.suggest import suggest

Loaded = TypeVar("Loaded")


def from_pretrained(load: Callable[..., Loaded], model_path: str, *, named_by: str = "--model_path",
                    needs_config: bool = True, **kwargs: Any) -> Loaded:
    """Call a ``from_pretrained`` and turn 'not found / offline' and damaged files into a message that names the
    path (``named_by``: where it came from, e.g. --model_path) and what to do; nothing is written."""
    named = f"{named_by}={model_path}" if named_by.startswith("--") else f"{named_by} {model_path}"
    local = Path(model_path).expanduser()
    try:
        if is_efficient_checkpoint(model_path):  # an adapter or BitFit biases: loaded onto their base model
            return _load_efficient(load, model_path, **kwargs)
        if missing_local_path(model_path):
            raise TextBoxUserError(f"{named}: directory {local} does not exist; give a directory "
                                   f"written by save_pretrained, or a Hugging Face Hub id such as facebook/bart-base")
        if needs_config and local.is_dir() and not (local / "config.json").is_file():
            raise TextBoxUserError(f"{named} has no config.json: give a directory written by "
                                   f"save_pretrained, e.g. a run's saved/<run>/checkpoint_best")
        loaded = load(model_path, **kwargs)
        if kwargs.get("quantization_config") is not None:
            loaded = prepare_for_training(loaded)  # every base weight frozen: a method trains on top
        return loaded
    except TextBoxUserError:
        raise
    except (OSError, ValueError, RuntimeError, _safetensor_error()) as error:
        unknown = _unknown_model_type(local)
        if unknown is not None:
            raise TextBoxUserError(f"{named}: {local / 'config.json'} says model_type {unknown!r}, which transformers "
                                   f"{_transformers_version()} does not know; correct model_type in that file, or "
                                   f"install a transformers release that has this architecture") from error
        damaged = damaged_files(local) if local.is_dir() else []
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        if damaged:
            raise TextBoxUserError(
                f"{named}: {'; '.join(damaged)}. The checkpoint is damaged (e.g. an interrupted copy or "
                f"a full disk): restore it from a copy, or write it again (rerun the training, or save_pretrained "
                f"from the model that wrote it); no file was changed") from error
        if isinstance(error, RuntimeError) and ("size mismatch" in reason.lower() or "mismatched_sizes" in reason):
            raise TextBoxUserError(
                f"{named}: its weights do not fit the model config (tensor shapes differ; transformers' load "
                f"report above lists them); "
                f"--config_kwargs cannot change the sizes of a pretrained model: drop those settings, or add "
                f"--from_scratch=True to train a new model of that shape") from error
        if isinstance(error, _safetensor_error()):
            raise TextBoxUserError(f"{named}: its weights cannot be read ({reason}); copy or save the checkpoint "
                                   f"again") from error
        if not isinstance(error, OSError):
            raise
        if local.exists():
            raise TextBoxUserError(f"{named}: cannot load it ({reason}); give a directory "
                                   f"written by save_pretrained (config.json, weights, tokenizer files)") from error
        raise TextBoxUserError(
            f"{named} is not a local directory and could not be loaded from the Hugging Face "
            f"Hub ({reason}); give a local model directory, or check the id and allow network access "
            f"(unset HF_HUB_OFFLINE) so that it can be downloaded") from error


def _load_efficient(load: Callable[..., Loaded], path: str | Path, **kwargs: Any) -> Loaded:
    """``load`` (a tokenizer, config or model class's from_pretrained) applied to an efficient checkpoint:
    tokenizers from the checkpoint, configs from the base, models as base + the trained parameters."""
    directory = Path(path).expanduser()
    if _loads_tokenizer(load):
        if (directory / "tokenizer_config.json").is_file():  # saved beside the adapter
            return load(str(directory), **kwargs)
        return from_pretrained(load, base_model_path(directory), **kwargs)
    if _loads_model(load) and "quantization_config" not in kwargs:  # a builder always says; others reload as saved
        kwargs = {**kwargs, **load_settings(recorded(directory))}
    loaded = from_pretrained(load, base_model_path(directory), **kwargs)
    if not isinstance(loaded, torch.nn.Module):
        return loaded
    return attach_trained_parameters(loaded, directory)


def _unknown_model_type(directory: Path) -> str | None:
    """The model_type of ``directory``'s config.json when transformers has no class for it (else None)."""

    try:
        model_type = json.loads((directory / "config.json").read_text(encoding="utf-8-sig")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None
    return (model_type if isinstance(model_type, str) and model_type not in CONFIG_MAPPING_NAMES
            and model_type not in _registered_model_types() else None)


def _registered_model_types() -> set[str]:
    """Types registered at run time (AutoConfig.register: the RNN checkpoints)."""

    return set(getattr(CONFIG_MAPPING, "_extra_content", {}))


def _transformers_version() -> str:
    return transformers.__version__


def _loads_model(load: Callable[..., object]) -> bool:
    owner = getattr(load, "__self__", None)
    return isinstance(owner, type) and (issubclass(owner, PreTrainedModel) or owner.__name__.startswith("AutoModel"))


def _loads_tokenizer(load: Callable[..., object]) -> bool:
    owner = getattr(load, "__self__", None)
    return isinstance(owner, type) and issubclass(owner, (AutoTokenizer, PreTrainedTokenizerBase))


def load_saved_model(path: str | Path, like: torch.nn.Module) -> PreTrainedModel:
    """A checkpoint written by save_model_files, loaded into the classes of ``like`` (the model that wrote it)."""

    base_class = type(inner_model(like))
    # through the shared loader: a damaged file is named (exit 2), never a traceback
    model = from_pretrained(base_class.from_pretrained, str(path), named_by="checkpoint")
    if not is_efficient_checkpoint(path):
        return model  # a plain model (also a merged LoRA/IA3)
    # The builder completed special token ids in the base's config; the reloaded base has them from disk.
    for name in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
        if getattr(like.config, name, None) is not None:
            setattr(model.config, name, getattr(like.config, name))
    if not (Path(path) / GENERATION_CONFIG).is_file():
        inner_model(model).generation_config = GenerationConfig.from_dict(like.generation_config.to_dict())
    return model


def _safetensor_error() -> type[Exception]:
    from safetensors import SafetensorError

    return SafetensorError


def damaged_files(directory: Path) -> list[str]:
    """textbox.model.files' findings (JSON, safetensors), plus pickled weights (.bin) that torch cannot read."""

    found = unreadable(directory)
    # weights only: other pickles (a checkpoint_last's optimizer or RNG states) are no model files
    for path in sorted({*directory.glob("pytorch_model*.bin"), *directory.glob("adapter_model*.bin")}):
        try:
            torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except (RuntimeError, OSError, ValueError, EOFError) as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            found.append(f"file {path} is damaged ({reason})")
    return found


def load_config(model_path: str, overrides: Mapping[str, Any],
                named_by: str = "--model_path") -> PretrainedConfig:
    """The model config at ``model_path`` with ``--config_kwargs`` applied; an unknown key is an error."""
    with refused_settings():
        config, unused = from_pretrained(AutoConfig.from_pretrained, model_path, named_by=named_by,
                                         return_unused_kwargs=True, **overrides)
    reject_unknown_config_kwargs(unused, config.model_type)
    return config


def load_model(auto_class: Any, model_path: str, model_config: PretrainedConfig, from_scratch: bool,
               quantization: Quantization | None = None) -> PreTrainedModel:
    """The checkpoint's weights, or (``--from_scratch=True``) its architecture freshly initialised;
    ``quantization`` (textbox.model.quantization.of_config) loads them quantised and frozen."""
    if from_scratch:  # an Auto class builds from a config with from_config, a model class by its constructor
        return getattr(auto_class, "from_config", auto_class)(model_config)

    settings = {"quantization_config": None, **load_settings(quantization)}  # None: not the checkpoint's record
    return from_pretrained(auto_class.from_pretrained, model_path, config=model_config, **settings)


# Keyword arguments of from_pretrained itself (where and how to load), not settings of the tokenizer.
_LOADING_KWARGS = {"cache_dir", "force_download", "local_files_only", "token", "revision", "subfolder", "use_fast",
                   "trust_remote_code", "tokenizer_type"}


def load_tokenizer(model_path: str, settings: Mapping[str, Any], named_by: str = "--model_path"
                   ) -> PreTrainedTokenizerBase:
    """``AutoTokenizer.from_pretrained(model_path, **--tokenizer_kwargs)``; a setting the tokenizer does not take
    (transformers would keep it and do nothing with it) is an error naming it. A tokenizer alone (--tokenizer_path)
    needs no model config.json."""

    tokenizer = from_pretrained(AutoTokenizer.from_pretrained, model_path, named_by=named_by,
                                needs_config=named_by == "--model_path", **settings)
    known = set(_LOADING_KWARGS) | set(getattr(tokenizer, "SPECIAL_TOKENS_ATTRIBUTES", ())) | \
        {name for name in vars(tokenizer) if not name.startswith("_")} | _read_from_kwargs(type(tokenizer))
    for cls in type(tokenizer).__mro__:
        if "__init__" in cls.__dict__:
            parameters = inspect.signature(cls.__dict__["__init__"]).parameters.values()
            known |= {p.name for p in parameters if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    unknown = sorted(set(settings) - known - {"self"})
    if unknown:
        raise TextBoxUserError(f"--tokenizer_kwargs: {', '.join(unknown)} "
                               f"{'is not a setting' if len(unknown) == 1 else 'are not settings'} of the "
                               f"{type(tokenizer).__name__} at {named_by}={model_path} (transformers would keep "
                               f"{'it' if len(unknown) == 1 else 'them'} unused)"
                               f"{suggest(unknown[0], known) or '; check the spelling'}")
    return tokenizer


def _read_from_kwargs(cls: type) -> set[str]:
    """The tokenizer settings transformers reads from ``**kwargs`` rather than naming them as parameters
    (``additional_special_tokens``, ``model_max_length``, ``padding_side``, ...): those its tokenizer docstring
    documents and those the ``__init__`` of ``cls`` and its bases take by name from kwargs."""

    names = set(re.findall(r"^\s+(\w+) \(", INIT_TOKENIZER_DOCSTRING, flags=re.MULTILINE))
    for base in cls.__mro__:
        if "__init__" not in base.__dict__:
            continue
        try:
            source = inspect.getsource(base.__dict__["__init__"])
        except (OSError, TypeError):  # no source (a compiled class): its signature is read above
            continue
        names |= set(re.findall(r"kwargs\.(?:pop|get)\(\s*[\"'](\w+)[\"']", source))
    return names


@contextlib.contextmanager
def refused_settings() -> Iterator[None]:
    """A --config_kwargs value the model config's validators refuse, as a user error (configuration checks find
    it first wherever the checkpoint's config.json can be read: textbox.model.kwargs_types; this covers a hub id
    read only when loading)."""
    try:
        yield
    except StrictDataclassFieldValidationError as error:
        raise TextBoxUserError(f"--config_kwargs: {error}".replace("\n", " ")) from error


def reject_unknown_config_kwargs(unknown: Mapping[str, object], model_type: str) -> None:
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
