"""Each --config_kwargs and --efficient_kwargs setting given, against the type its class declares: checked with the
configuration, before a tokenizer is trained or a model built.

Why a module of its own: transformers' model configs are strict dataclasses that check a value only when it is
set, which is when the model is built (after the BPE tokenizer is trained, with a traceback); peft's configs check
nothing, and a mistyped LoRA rank fails inside the first layer it adapts. textbox.model.checks calls these with the
registry's other checks. The classes (and with them torch and transformers) are imported only when a setting was
given: the family yaml's own values (configs/model/<model>.yaml) are not checked again.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from textbox.config.families import ENCODER_DECODER, RNN, TRANSFORMER
from textbox.config.family_keys import ENCODERS, NEW, RNN_SETTINGS, set_settings
from textbox.config.layers import CONFIG_DIR
from textbox.config.schema import ConfigValue
from textbox.model.efficient import PEFT_METHODS, RESERVED_SETTINGS
from textbox.utils.suggest import suggest


def config_kwargs_problems(family: str, current: str | None, values: Mapping[str, ConfigValue],
                           sources: Mapping[str, str], where: Callable[[str], str]) -> list[str]:
    """Each config_kwargs setting the user gave whose value the model config class would refuse (transformers'
    validators of that field: its type, and any check the field declares); the RNN's settings as its config checks
    them. ``current``: the builder's situation (textbox.config.family_keys.situation), None when unknown."""
    settings = set_settings(values, sources, "config_kwargs")
    if not settings or current is None or _shipped(sources.get("config_kwargs", "default")):
        return []
    if family == RNN:
        return _rnn_problems(values, where)
    model_types = _model_types(family, current, values)
    found = []
    for key, value in settings.items():
        for model_type in model_types:
            problem = _field_problem(model_type, key, value)
            if problem:
                found.append(f"{where('config_kwargs')}: {problem}")
                break
    return found


def _shipped(origin: str) -> bool:
    """Set by a yaml the framework ships (configs/: a dataset yaml's per_model section, a model yaml), whose values
    its tests hold: not checked again, so that the default run's config check stays free of torch and transformers
    (tests/unit/test_light_imports.py). What a user gives, on the command line or in a file of theirs, is checked."""
    path = Path(origin)
    return path.suffix in (".yaml", ".yml") and path.resolve().is_relative_to(CONFIG_DIR.resolve())


def efficient_kwargs_problems(values: Mapping[str, ConfigValue], where: Callable[[str], str]) -> list[str]:
    """Each efficient_kwargs setting that the method's peft config does not have, or whose value does not fit the
    type that config declares (peft itself does not check them)."""
    methods = [str(name).lower() for name in values["efficient_methods"]]
    kwargs = values["efficient_kwargs"]
    if len(methods) != 1 or methods[0] not in PEFT_METHODS or not kwargs:
        return []
    try:
        import peft
    except ImportError:  # applying the method names the missing package
        return []

    class_name = PEFT_METHODS[methods[0]][0]
    peft_class = getattr(peft, class_name)
    fields = {field.name: field for field in dataclasses.fields(peft_class)}
    settable = set(fields) - RESERVED_SETTINGS
    try:
        hints = typing.get_type_hints(peft_class)
    except (NameError, TypeError, AttributeError):  # an annotation that does not resolve: its field is not checked
        hints = {}
    found = []
    for key, value in kwargs.items():
        if key not in settable:
            found.append(f"{where('efficient_kwargs')}: {key!r} is not a setting of {methods[0]} (peft "
                         f"{class_name}){suggest(key, settable)}; its settings: {', '.join(sorted(settable))}")
            continue
        annotation = hints.get(key, fields[key].type)
        if isinstance(annotation, str) or (value is None and fields[key].default is None):
            continue
        if _fits(value, annotation) is False:
            found.append(f"{where('efficient_kwargs')}: {key!r} of {methods[0]} (peft {class_name}) must be "
                         f"{spell(annotation)}, got {type(value).__name__} {value!r}")
    return found


def spell(annotation: Any) -> str:
    """An annotation as a reader writes it: ``int or None``, ``list of str``, ``'none', 'all' or 'lora_only'``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None) or annotation is None:
        return "None"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(dict.fromkeys(spell(arg) for arg in args))
    if origin is typing.Literal:
        return ", ".join(repr(arg) for arg in args)
    if origin in (list, tuple, set, collections.abc.Sequence) and args:
        return f"{origin.__name__ if isinstance(origin, type) else 'sequence'} of {spell(args[0])}"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _fits(value: Any, annotation: Any) -> bool | None:
    """Whether ``value`` fits ``annotation``; None where the annotation cannot tell (a class peft builds from a
    dict, a forward reference): such a value is let through. An int fits a float, a tuple a list; a string fits a
    Literal of strings (peft documents patterns such as 'pissa_niter_[number of iters]' there)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any:
        return True
    if annotation is None or annotation is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        verdicts = [_fits(value, arg) for arg in args]
        return True if True in verdicts else (None if None in verdicts else False)
    if origin is typing.Literal:
        return value in args or any(type(value) is type(arg) for arg in args)
    if origin in (list, tuple, set, collections.abc.Sequence):
        if not isinstance(value, (list, tuple, set)):
            return False
        if not args or args[-1] is Ellipsis or origin is tuple:
            return True
        verdicts = [_fits(item, args[0]) for item in value]
        return False not in verdicts
    if origin is dict or annotation is dict:
        return isinstance(value, dict)
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation in (str, list):
        return isinstance(value, annotation if annotation is str else (list, tuple))
    return None


def _model_types(family: str, current: str, values: Mapping[str, ConfigValue]) -> list[str]:
    """The model_type(s) whose config the settings go to: BART for a new transformer, the checkpoint's otherwise
    (both halves of an encoder-decoder pair); empty when the checkpoint's config.json cannot be read here (a hub
    id not in the cache: the builder checks when it loads)."""
    if family == TRANSFORMER and current == NEW:
        return ["bart"]
    record = _config_json(values["model_path"])
    if family == ENCODER_DECODER and current == ENCODERS:  # config_kwargs go to both halves
        decoder = _config_json(values["decoder_model_path"] or values["model_path"])
        return [str(part["model_type"]) for part in (record, decoder) if part.get("model_type")]
    if record.get("model_type") == "encoder-decoder":  # a saved pair: each setting goes to the halves that have it
        halves = [record.get(half) for half in ("encoder", "decoder")]
        return [str(half["model_type"]) for half in halves if isinstance(half, dict) and half.get("model_type")]
    return [str(record["model_type"])] if record.get("model_type") else []


def _config_json(model_path: ConfigValue) -> dict[str, Any]:
    """The config.json of a local checkpoint, or of a hub id from the hub cache (never downloaded here)."""
    if not model_path:
        return {}
    path: str | Path | None = Path(str(model_path)).expanduser() / "config.json"
    if not Path(str(path)).is_file():
        from huggingface_hub import try_to_load_from_cache

        try:
            path = try_to_load_from_cache(str(model_path), "config.json")
        except (ValueError, OSError):  # not a repo id: a directory that does not exist is reported by the path check
            return {}
        if not isinstance(path, str):
            return {}
    try:
        loaded = json.loads(Path(str(path)).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}  # a damaged file: named by the checkpoint checks, or by the loader
    return loaded if isinstance(loaded, dict) else {}


def _field_problem(model_type: str, key: str, value: Any) -> str | None:
    """What transformers' validators of the field ``key`` (through the config's attribute_map) say of ``value``,
    in a sentence; None when they accept it, or the config class has none (not a strict dataclass)."""
    from transformers import CONFIG_MAPPING

    try:
        config_class = CONFIG_MAPPING[model_type]
    except KeyError:  # a model type transformers does not know: the checkpoint check names it
        return None
    field = getattr(config_class, "attribute_map", {}).get(key, key)
    validators = getattr(config_class, "__validators__", {}).get(field, [])
    for validator in validators:
        try:
            validator(value)
        except (TypeError, ValueError) as error:
            declared = {item.name: item.type for item in dataclasses.fields(config_class)}.get(field)
            if isinstance(error, TypeError) and declared is not None:
                return (f"{key!r} must be {spell(declared)} ({config_class.__name__}'s type), got "
                        f"{type(value).__name__} {value!r}")
            return f"{key!r}={value!r} is refused by {config_class.__name__}: {error}"
    return None


def _rnn_problems(values: Mapping[str, ConfigValue], where: Callable[[str], str]) -> list[str]:
    """The RNN config's own check (textbox.model.rnn_config) of the settings it takes, the user's over the yaml's."""
    from textbox.model.rnn_config import RNNSeq2SeqConfig

    merged = {key: value for key, value in values["config_kwargs"].items() if key in RNN_SETTINGS}
    try:
        RNNSeq2SeqConfig(cell=str(values["model"]).lower(), **merged)  # its default vocabulary holds the ids
    except ValueError as error:
        return [f"{where('config_kwargs')} of the {str(values['model']).lower()} model: {error}"]
    except TypeError:
        return []  # settings it does not take: family_keys names them
    return []
