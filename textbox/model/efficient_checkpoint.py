"""Parameter-efficient tuning: peft's LoRA, prefix-tuning, prompt-tuning, p-tuning and IA3, and BitFit.

``apply_efficient_methods`` wraps or freezes a built model; ``save_model_files`` writes only what was trained
(peft's adapter files, or BitFit's biases) beside a record of the base model's path, and the loaders put such a
checkpoint back on its base model: ``from_pretrained`` in textbox.model.loading sends any builder's load of an
efficient checkpoint here, and ``load_saved_model`` serves the Trainer's checkpoint_best.

With ``efficient_unfreeze_model=True`` the whole model trains, so the whole model is saved: LoRA/IA3 merged into
a plain model, BitFit as a plain model, prompt methods as the full base model in ``base_model/`` plus the adapter.

Nothing heavy is imported at module level: textbox.config.validate reads the method names from here.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable

from textbox.config.errors import TextBoxUserError

# TextBox name -> (peft config class, TextBox's defaults, merged under --efficient_kwargs)
PEFT_METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "lora": ("LoraConfig", {"r": 4, "lora_alpha": 32, "lora_dropout": 0.1}),
    "prefix-tuning": ("PrefixTuningConfig", {"num_virtual_tokens": 10}),
    "prompt-tuning": ("PromptTuningConfig", {"num_virtual_tokens": 10}),
    "p-tuning": ("PromptEncoderConfig", {"num_virtual_tokens": 10}),
    "ia3": ("IA3Config", {}),
}
METHODS = (*PEFT_METHODS, "bitfit")
_PEFT_TYPES = {"LORA": "lora", "PREFIX_TUNING": "prefix-tuning", "PROMPT_TUNING": "prompt-tuning",
               "P_TUNING": "p-tuning", "IA3": "ia3"}
_MERGEABLE = ("lora", "ia3")
# Fields TextBox sets itself; the user's kwargs must not.
_RESERVED = {"task_type", "peft_type", "base_model_name_or_path", "inference_mode", "revision", "auto_mapping"}

ADAPTER_CONFIG = "adapter_config.json"  # written by peft
BITFIT_CONFIG = "bitfit_config.json"  # {"method": "bitfit", "base_model_name_or_path": ..., "parameters": [...]}
BITFIT_WEIGHTS = "bitfit_model.safetensors"
BASE_SUBDIR = "base_model"  # the trained base of a prompt method with efficient_unfreeze_model=True
GENERATION_CONFIG = "generation_config.json"
ATTRIBUTE = "textbox_efficient"  # set on a tuned model: {"method", "unfreeze", "base_model_path"}


def method_problems(methods: list[str]) -> list[str]:
    """Unknown names (with a suggestion), repeats and combinations: one method per run."""
    from textbox.config.loader import suggest

    problems = []
    for name in methods:
        if name.lower() not in METHODS:
            problems.append(f"unknown method {name!r}{suggest(name.lower(), METHODS)}; available: "
                            f"{', '.join(METHODS)}")
    if len({name.lower() for name in methods}) > 1:
        problems.append(f"{', '.join(methods)} cannot be combined: give one method (LoRA with trained biases "
                        f"is --efficient_methods=['lora'] --efficient_kwargs={{'bias': 'all'}})")
    elif len(methods) > 1:
        problems.append(f"{methods[0]!r} is given {len(methods)} times; give it once")
    return problems


def apply_efficient_methods(config: Any, model: Any, logger: Any) -> Any:
    """The model with only the method's parameters trainable (all of them too with efficient_unfreeze_model)."""
    problems = method_problems(list(config.efficient_methods))
    if problems:
        raise TextBoxUserError(f"--efficient_methods: {'; '.join(problems)}")
    method = config.efficient_methods[0].lower()
    if getattr(model, ATTRIBUTE, None) is not None:
        raise TextBoxUserError(f"--model_path={config.model_path} already holds a "
                               f"{getattr(model, ATTRIBUTE)['method']} checkpoint, which continues training as it "
                               f"is; drop --efficient_methods (or give its base model as --model_path)")
    unfreeze = config.efficient_unfreeze_model
    if not unfreeze:
        _check_reloadable_base(config, model)
    if method == "bitfit":
        model = _bitfit(model)
    else:
        model = _peft(config, model, method, dict(config.efficient_kwargs))
        model.peft_config["default"].base_model_name_or_path = _base_path(config.model_path)
    if unfreeze:
        for parameter in model.parameters():
            parameter.requires_grad_(True)
    record = {"method": method, "unfreeze": unfreeze, "base_model_path": _base_path(config.model_path)}
    setattr(model, ATTRIBUTE, record)  # read by save_model_files
    logger.info(f"efficient tuning: {method}{' with the whole model unfrozen' if unfreeze else ''}; "
                f"{trainable_summary(model)}")
    return model


def trainable_summary(model: Any) -> str:
    from textbox.model.loading import count_parameters

    trainable, total = count_parameters(model)
    return f"{trainable:,} of {total:,} parameters trainable ({100 * trainable / max(total, 1):.3f}%)"


def _base_path(model_path: str | None) -> str | None:
    """Absolute when local, so that the checkpoint loads from any working directory; a hub id as it is."""
    if model_path and Path(model_path).expanduser().exists():
        return str(Path(model_path).expanduser().resolve())
    return model_path


def _check_reloadable_base(config: Any, model: Any) -> None:
    """Only the trained parameters are saved: the base must load again, identical, from --model_path."""
    if not config.model_path or config.from_scratch:
        raise TextBoxUserError("--efficient_methods tune a pretrained model whose weights load again from "
                               "--model_path (only the tuned parameters are saved); this model starts from "
                               "random weights: give --model_path (without --from_scratch=True), or "
                               "--efficient_unfreeze_model=True to train and save the whole model")
    if getattr(model, "textbox_warm_started", False):
        raise TextBoxUserError(f"--model={config.model} warm-started from encoder/decoder checkpoints has new, "
                               f"random cross-attention weights that --efficient_methods would leave untrained; "
                               f"fine-tune it first (or add --efficient_unfreeze_model=True)")


def _peft(config: Any, model: Any, method: str, kwargs: dict[str, Any]) -> Any:
    import peft

    class_name, defaults = PEFT_METHODS[method]
    peft_class = getattr(peft, class_name)
    fields = {field.name for field in dataclasses.fields(peft_class)} - _RESERVED
    unknown = sorted(set(kwargs) - fields)
    if unknown:
        from textbox.config.loader import suggest

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
    _check_positions(config, model, method, settings.get("num_virtual_tokens", 0))
    try:
        peft_config = peft_class(task_type=task, **settings)
        return peft.get_peft_model(model, peft_config)
    except (TypeError, ValueError, AttributeError, KeyError) as error:
        raise TextBoxUserError(f"--efficient_methods=['{method}'] with settings {settings} cannot be applied to "
                               f"this {model.config.model_type!r} model: {error}") from error


def _check_positions(config: Any, model: Any, method: str, virtual_tokens: int) -> None:
    """Virtual tokens take positions: prompt/p-tuning before the source (or the whole sequence of a decoder-only
    LM), prefix-tuning before the decoder's (or LM's) tokens; learned position tables must hold them."""
    limit = getattr(model.config, "max_position_embeddings", None)
    if not virtual_tokens or not isinstance(limit, int):
        return
    if not getattr(model.config, "is_encoder_decoder", False):
        needed, what = config.src_len + 1 + config.tgt_len, "src_len + 1 + tgt_len"  # textbox.model.causal_lm
    elif method == "prefix-tuning":
        needed, what = config.tgt_len + 1, "tgt_len + 1"
    else:
        needed, what = config.src_len, "src_len"
    if virtual_tokens + needed > limit:
        raise TextBoxUserError(f"--efficient_methods=['{method}']: num_virtual_tokens={virtual_tokens} plus {what} "
                               f"({needed}) exceed the model's {limit} positions; lower num_virtual_tokens "
                               f"(--efficient_kwargs) or the lengths")


def _pair_sizes(config: Any, method: str) -> dict[str, int]:
    """Sizes peft reads from a model config, which an EncoderDecoderModel keeps in its halves' configs: prompts
    are encoder inputs, prefixes decoder keys/values."""
    half = config.decoder if method == "prefix-tuning" else config.encoder
    sizes = {"num_layers": getattr(half, "num_hidden_layers", None), "token_dim": getattr(half, "hidden_size", None),
             "num_attention_heads": getattr(half, "num_attention_heads", None)}
    return {name: value for name, value in sizes.items() if isinstance(value, int)}


def _default_targets(model: Any, method: str) -> dict[str, Any]:
    """peft knows the layers to adapt per model type; an EncoderDecoderModel (bert2bert) takes its halves'."""
    from peft.utils import constants

    mapping = {"lora": constants.TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING,
               "ia3": constants.TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING}[method]
    config = model.config
    if config.model_type in mapping or config.model_type != "encoder-decoder":
        return {}
    targets = sorted({*mapping.get(config.encoder.model_type, []), *mapping.get(config.decoder.model_type, [])})
    settings: dict[str, Any] = {"target_modules": targets} if targets else {}
    if method == "ia3" and targets:
        feedforward = constants.TRANSFORMERS_MODELS_TO_IA3_FEEDFORWARD_MODULES_MAPPING
        settings["feedforward_modules"] = sorted({*feedforward.get(config.encoder.model_type, []),
                                                  *feedforward.get(config.decoder.model_type, [])})
    return settings


def _bitfit(model: Any) -> Any:
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


# --- saving ---------------------------------------------------------------------------------------
def save_model_files(model: Any, directory: Path) -> None:
    """What checkpoint_best holds: the whole model (save_pretrained), or only what an efficient method trained."""
    info = getattr(model, ATTRIBUTE, None)
    directory = Path(directory)
    if info is None:
        model.save_pretrained(directory)
    elif info["method"] == "bitfit":
        if info["unfreeze"]:
            model.save_pretrained(directory)
        else:
            _save_bitfit(model, directory, info["base_model_path"])
    elif not info["unfreeze"]:
        model.save_pretrained(directory)  # peft: adapter_config.json + adapter_model.safetensors
        model.generation_config.save_pretrained(directory)
    elif info["method"] in _MERGEABLE:
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


# --- loading --------------------------------------------------------------------------------------
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


def load_efficient(load: Callable[..., Any], path: str | Path, **kwargs: Any) -> Any:
    """``load`` (a tokenizer, config or model class's from_pretrained) applied to an efficient checkpoint:
    tokenizers from the checkpoint, configs from the base, models as base + the trained parameters."""
    from textbox.model.loading import from_pretrained

    directory = Path(path).expanduser()
    if _loads_tokenizer(load):
        if (directory / "tokenizer_config.json").is_file():  # saved beside the adapter
            return load(str(directory), **kwargs)
        return from_pretrained(load, base_model_path(directory), **kwargs)
    loaded = from_pretrained(load, base_model_path(directory), **kwargs)
    import torch

    if not isinstance(loaded, torch.nn.Module):
        return loaded
    return attach_trained_parameters(loaded, directory)


def _loads_tokenizer(load: Callable[..., Any]) -> bool:
    from transformers import AutoTokenizer, PreTrainedTokenizerBase

    owner = getattr(load, "__self__", None)
    return isinstance(owner, type) and issubclass(owner, (AutoTokenizer, PreTrainedTokenizerBase))


def attach_trained_parameters(model: Any, path: str | Path) -> Any:
    """The base ``model`` with the checkpoint's adapter or biases, trainable as when they were saved."""
    from transformers import GenerationConfig

    directory = Path(path).expanduser()
    base = base_model_path(directory)
    if (directory / ADAPTER_CONFIG).is_file():
        from peft import PeftModel

        # peft loads prompt methods frozen only; their prompt encoder is made trainable again below
        prompt_learning = json.loads((directory / ADAPTER_CONFIG).read_text(encoding="utf-8")).get("peft_type") \
            in ("PREFIX_TUNING", "PROMPT_TUNING", "P_TUNING")
        model = PeftModel.from_pretrained(model, str(directory), is_trainable=not prompt_learning)
        if prompt_learning:
            for parameter in model.prompt_encoder.parameters():
                parameter.requires_grad_(True)
        method = _PEFT_TYPES.get(str(model.active_peft_config.peft_type.value), "adapter")
    else:
        model = _attach_bitfit(model, directory)
        method = "bitfit"
    if (directory / GENERATION_CONFIG).is_file():
        _inner(model).generation_config = GenerationConfig.from_pretrained(directory)
    setattr(model, ATTRIBUTE, {"method": method, "unfreeze": (directory / BASE_SUBDIR).is_dir(),
                               "base_model_path": base})
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


def load_saved_model(path: str | Path, like: Any) -> Any:
    """A checkpoint written by save_model_files, loaded into the classes of ``like`` (the model that wrote it)."""
    from transformers import GenerationConfig

    from textbox.model.loading import from_pretrained

    base_class = type(_inner(like))
    # through the shared loader: a damaged file is named (exit 2), never a traceback
    model = from_pretrained(base_class.from_pretrained, str(path), named_by="checkpoint")
    if not is_efficient_checkpoint(path):
        return model  # a plain model (also a merged LoRA/IA3)
    # The builder completed special token ids in the base's config; the reloaded base has them from disk.
    for name in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
        if getattr(like.config, name, None) is not None:
            setattr(model.config, name, getattr(like.config, name))
    if not (Path(path) / GENERATION_CONFIG).is_file():
        _inner(model).generation_config = GenerationConfig.from_dict(like.generation_config.to_dict())
    return model


def _inner(model: Any) -> Any:
    """The transformers model itself (a PeftModel's attribute writes would stay on the wrapper)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model
