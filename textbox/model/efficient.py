"""Parameter-efficient tuning: peft's LoRA, prefix-tuning, prompt-tuning, p-tuning and IA3, and BitFit.

``apply_efficient_methods`` wraps or freezes a built model and returns its record with the method
(textbox.model.built_model.EfficientRecord), which tells saving what to write. What such a model's checkpoint holds,
and how it loads again, is textbox.model.adapter_files's job.

With ``efficient_unfreeze_model=True`` the whole model trains, and so is saved whole.

Nothing heavy is imported at module level: textbox.model.checks reads the method names from here.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textbox.config.errors import TextBoxUserError
from textbox.model.built_model import BuiltModel, EfficientRecord
from textbox.model.quantization import of_config
from textbox.utils.suggest import suggest

if TYPE_CHECKING:
    import logging

    import torch
    from transformers import PretrainedConfig, PreTrainedModel

    from textbox.config import Config

# TextBox name -> (peft config class, TextBox's defaults, merged under --efficient_kwargs)
PEFT_METHODS: dict[str, tuple[str, dict[str, object]]] = {
    "lora": ("LoraConfig", {"r": 4, "lora_alpha": 32, "lora_dropout": 0.1}),
    "prefix-tuning": ("PrefixTuningConfig", {"num_virtual_tokens": 10}),
    "prompt-tuning": ("PromptTuningConfig", {"num_virtual_tokens": 10}),
    "p-tuning": ("PromptEncoderConfig", {"num_virtual_tokens": 10}),
    "ia3": ("IA3Config", {}),
}
METHODS = (*PEFT_METHODS, "bitfit")
# TextBox 2.0's methods with no counterpart (its 'p-tuning-v2' is prefix-tuning: textbox/config/textbox2/names.py).
REFUSED_METHODS = {"adapter": "Houlsby adapters are not in peft (the library used here), and are not written by "
                              "hand: choose another method, e.g. ['lora'] or ['ia3']"}
# Fields TextBox sets itself; the user's kwargs must not.
RESERVED_SETTINGS = {"task_type", "peft_type", "base_model_name_or_path", "inference_mode", "revision", "auto_mapping"}


def method_problems(methods: list[str]) -> list[str]:
    """Unknown names (with a suggestion), repeats and combinations: one method per run."""

    problems = []
    for name in methods:
        if name.lower() in REFUSED_METHODS:
            problems.append(f"TextBox 2.0's {name!r}: {REFUSED_METHODS[name.lower()]}")
        elif name.lower() not in METHODS:
            problems.append(f"unknown method {name!r}{suggest(name.lower(), METHODS)}; available: "
                            f"{', '.join(METHODS)}")
    if len({name.lower() for name in methods}) > 1:
        problems.append(f"{', '.join(methods)} cannot be combined: give one method (LoRA with trained biases "
                        f"is --efficient_methods=['lora'] --efficient_kwargs={{'bias': 'all'}})")
    elif len(methods) > 1:
        problems.append(f"{methods[0]!r} is given {len(methods)} times; give it once")
    return problems


def virtual_tokens(config: Config) -> tuple[str | None, int]:
    """The method of ``config`` whose virtual tokens take positions (prompt-, p- and prefix-tuning) and their
    number (--efficient_kwargs over TextBox's default); (None, 0) for the others. textbox.model.lengths fits the
    lengths around them before the method is applied."""
    methods = [name.lower() for name in config.efficient_methods]
    if not methods or "num_virtual_tokens" not in PEFT_METHODS.get(methods[0], ("", {}))[1]:
        return None, 0
    count = {**PEFT_METHODS[methods[0]][1], **config.efficient_kwargs}.get("num_virtual_tokens", 0)
    valid = isinstance(count, int) and not isinstance(count, bool) and count > 0
    return (methods[0], count) if valid else (None, 0)


def apply_efficient_methods(config: Config, built: BuiltModel, logger: logging.Logger) -> BuiltModel:
    """The built model with only the method's parameters trainable (all of them too with
    efficient_unfreeze_model), recorded in the returned BuiltModel's ``efficient``."""
    problems = method_problems(list(config.efficient_methods))
    if problems:
        raise TextBoxUserError(f"--efficient_methods: {'; '.join(problems)}")
    method = config.efficient_methods[0].lower()
    if built.efficient is not None:
        raise TextBoxUserError(f"--model_path={config.model_path} already holds a {built.efficient.method} "
                               f"checkpoint, which continues training as it is; drop --efficient_methods (or give "
                               f"its base model as --model_path)")
    unfreeze = config.efficient_unfreeze_model
    model = built.model
    if not unfreeze:
        _check_reloadable_base(config, built)
    if method == "bitfit":
        model = _bitfit(model)
    else:
        model = _peft(config, model, method, dict(config.efficient_kwargs))
        model.peft_config["default"].base_model_name_or_path = _base_path(config.model_path)
    if unfreeze:
        for parameter in model.parameters():
            parameter.requires_grad_(True)
    logger.info(f"efficient tuning: {method}{' with the whole model unfrozen' if unfreeze else ''}; "
                f"{trainable_summary(model)}")

    record = EfficientRecord(method, unfreeze, _base_path(config.model_path), of_config(config))
    return dataclasses.replace(built, model=model, efficient=record)


def trainable_summary(model: torch.nn.Module) -> str:
    from textbox.model.loading import count_parameters

    trainable, total = count_parameters(model)
    return f"{trainable:,} of {total:,} parameters trainable ({100 * trainable / max(total, 1):.3f}%)"


def _base_path(model_path: str | None) -> str | None:
    """Absolute when local, so that the checkpoint loads from any working directory; a hub id as it is."""
    if model_path and Path(model_path).expanduser().exists():
        return str(Path(model_path).expanduser().resolve())
    return model_path


def _check_reloadable_base(config: Config, built: BuiltModel) -> None:
    """Only the trained parameters are saved: the base must load again, identical, from --model_path."""
    if not config.model_path or config.from_scratch:
        raise TextBoxUserError("--efficient_methods tune a pretrained model whose weights load again from "
                               "--model_path (only the tuned parameters are saved); this model starts from "
                               "random weights: give --model_path (without --from_scratch=True), or "
                               "--efficient_unfreeze_model=True to train and save the whole model")
    if built.warm_started:
        raise TextBoxUserError(f"--model={config.model} warm-started from encoder/decoder checkpoints has new, "
                               f"random cross-attention weights that --efficient_methods would leave untrained; "
                               f"fine-tune it first (or add --efficient_unfreeze_model=True)")


def _peft(config: Config, model: PreTrainedModel, method: str, kwargs: dict[str, object]) -> Any:  # a peft.PeftModel
    import peft

    class_name, defaults = PEFT_METHODS[method]
    peft_class = getattr(peft, class_name)
    fields = {field.name for field in dataclasses.fields(peft_class)} - RESERVED_SETTINGS
    unknown = sorted(set(kwargs) - fields)
    if unknown:
        raise TextBoxUserError(
            f"--efficient_kwargs: {unknown[0]!r} is not a setting of {method} (peft {class_name})"
            f"{suggest(unknown[0], fields)}; its settings: {', '.join(sorted(fields))}")
    settings = {**defaults, **kwargs}
    encoder_decoder = bool(getattr(model.config, "is_encoder_decoder", False))
    task = peft.TaskType.SEQ_2_SEQ_LM if encoder_decoder else peft.TaskType.CAUSAL_LM
    if method in ("lora", "ia3") and "target_modules" not in settings:
        settings.update(_default_targets(model, method))
    if method not in ("lora", "ia3") and model.config.model_type == "encoder-decoder":
        settings = {**_pair_sizes(model.config, method), **settings}
    try:
        peft_config = peft_class(task_type=task, **settings)
        return peft.get_peft_model(model, peft_config)
    except (TypeError, ValueError, AttributeError, KeyError) as error:
        raise TextBoxUserError(f"--efficient_methods=['{method}'] with settings {settings} cannot be applied to "
                               f"this {model.config.model_type!r} model: {error}") from error


def _pair_sizes(config: PretrainedConfig, method: str) -> dict[str, int]:
    """Sizes peft reads from a model config, which an EncoderDecoderModel keeps in its halves' configs: prompts
    are encoder inputs, prefixes decoder keys/values."""
    half = config.decoder if method == "prefix-tuning" else config.encoder
    sizes = {"num_layers": getattr(half, "num_hidden_layers", None), "token_dim": getattr(half, "hidden_size", None),
             "num_attention_heads": getattr(half, "num_attention_heads", None)}
    return {name: value for name, value in sizes.items() if isinstance(value, int)}


def _default_targets(model: PreTrainedModel, method: str) -> dict[str, object]:
    """peft knows the layers to adapt per model type; an EncoderDecoderModel (bert2bert) takes its halves'."""
    from peft.utils import constants

    mapping = {"lora": constants.TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING,
               "ia3": constants.TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING}[method]
    config = model.config
    if config.model_type in mapping or config.model_type != "encoder-decoder":
        return {}
    targets = sorted({*mapping.get(config.encoder.model_type, []), *mapping.get(config.decoder.model_type, [])})
    settings: dict[str, object] = {"target_modules": targets} if targets else {}
    if method == "ia3" and targets:
        feedforward = constants.TRANSFORMERS_MODELS_TO_IA3_FEEDFORWARD_MODULES_MAPPING
        settings["feedforward_modules"] = sorted({*feedforward.get(config.encoder.model_type, []),
                                                  *feedforward.get(config.decoder.model_type, [])})
    return settings


def _bitfit(model: PreTrainedModel) -> PreTrainedModel:
    """BitFit (Ben Zaken et al., 2022): only the bias terms train."""
    biases = [name for name, _ in model.named_parameters() if _is_bias(name)]
    if not biases:
        raise TextBoxUserError(f"--efficient_methods=['bitfit'] trains only bias terms, and this "
                               f"{model.config.model_type!r} model has none (T5 and Llama-style models have no "
                               f"biases); choose another method, e.g. ['lora']")
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(_is_bias(name))
    return model


def _is_bias(name: str) -> bool:
    """Linear/norm biases (``.bias``), ``..._bias`` parameters, and torch RNN cells' ``bias_ih_l0``/``bias_hh_l0``."""
    last = name.rsplit(".", 1)[-1]
    return last == "bias" or last.endswith("_bias") or last.startswith(("bias_ih_l", "bias_hh_l"))
