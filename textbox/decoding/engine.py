"""Which engine decodes: CTranslate2 where the model converts and every setting maps, transformers otherwise.

``--decoding_backend=auto`` (the default) picks CTranslate2 for BART/mBART, T5/mT5, Marian, Pegasus, M2M100
(its Translator) and GPT-2/OPT/Llama (its Generator), and transformers' ``generate`` for the rest (the RNN
models, EncoderDecoderModel pairs, prompt/prefix adapters, settings CTranslate2 has no equal for on the model's
kind, models its converter fails on, weights split by FSDP or DeepSpeed ZeRO-3, bitsandbytes-quantised weights,
which an explicit ``ctranslate2`` converts dequantised); one log line says which engine decodes and why.
``--decoding_backend=ctranslate2`` refuses, before anything is built, what the config alone shows would not run on
CTranslate2 (``problems``, called by textbox.checks), and, once the model is built and before training, what the
model shows (the run chooses its engines then: ``choose_engine``); ``transformers`` never converts.

A conversion, a load of the converted model or a translation that fails while decoding (``after_failure``) is
logged with its reason and decoded with transformers under auto (for that kind of decode, the rest of the run),
and stops an explicit ctranslate2 with the reason.

The run's options (``DecodingOptions.from_values(config)``) are built by the Evaluator and passed to
``generate_sequences`` for validation, test and ``--input_file``; a caller that passes none decodes with
transformers.

Nothing heavy is imported at module level: textbox.checks imports this module.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from textbox.config import Config, TextBoxUserError
from textbox.config.families import CTRANSLATE2_GENERATOR_TYPES, CTRANSLATE2_TRANSLATOR_TYPES, FAMILIES
from textbox.config.launcher import sharded_training
from textbox.config.schema import PROMPT_METHODS
from textbox.decoding.ctranslate2_settings import stopping_note, unsupported_settings
from textbox.decoding.generation_config import effective_config
from textbox.utils.logging import get_logger

if TYPE_CHECKING:  # types only: this module imports nothing heavy
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from textbox.decoding.ctranslate2_cache import DecodedModel

_CONVERTED_TYPES = (*CTRANSLATE2_TRANSLATOR_TYPES, *CTRANSLATE2_GENERATOR_TYPES)



@dataclass(frozen=True)
class DecodingOptions:
    """The run's decoding keys (--decoding_backend, --decoding_precision) and what conversion needs."""

    backend: str = "transformers"
    precision: str = "auto"
    cache_dir: str = ".cache/textbox"
    seed: int = 0
    sharded: str | None = None  # "FSDP" | "DeepSpeed ZeRO-3": the launcher splits the weights over the processes

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> "DecodingOptions":
        """The run's options; ``sharded`` comes from the launcher's environment (textbox.config.launcher)."""
        return cls(values["decoding_backend"], values["decoding_precision"], str(values["cache_dir"]),
                   int(values["seed"]), sharded_training())


@dataclass(frozen=True)
class EngineChoice:
    name: str  # "ctranslate2" | "transformers"
    reason: str
    kind: str = ""  # "translator" | "generator" for CTranslate2


class EngineChoices:
    """The engines one run decodes with. A choice is logged when it differs from the last one logged, so that the
    latest "decoding with" line of a run's log names the engine of every decode after it, and a switch is never
    silent. Once CTranslate2 failed for a kind of decode (``valid``, ``test``, ``generate``) under auto, that kind
    stays on transformers for the rest of the run: its validation figures, compared with each other to choose the
    best model, then come from one engine after the switch the log names."""

    def __init__(self, keeps_failures: bool = True) -> None:
        self._logged: EngineChoice | None = None
        self.keeps_failures = keeps_failures
        self.failures: dict[str, EngineChoice] = {}  # kind of decode -> transformers, since CTranslate2 failed

    def record(self, choice: EngineChoice) -> EngineChoice:
        if choice != self._logged:
            get_logger().info(f"decoding with {choice.name}: {choice.reason}")
            self._logged = choice
        return choice


# The choices of callers that keep none (a test, a benchmark): one record for the whole process, which forgets
# failures (its decodes belong to no one run). A run keeps its own (the Evaluator's), so that its project.log names
# its engine even when a study worker ran another run before it.
_process_choices = EngineChoices(keeps_failures=False)


def problems(config: Config) -> list[str]:
    """The decoding keys of a configuration (textbox/checks.py calls this with the other registries' checks,
    before anything runs)."""
    return decoding_problems(config, config.where)


def decoding_problems(values: Mapping[str, Any], where: Callable[[str], str]) -> list[str]:
    """Config checks of the decoding keys; with --decoding_backend=ctranslate2 also everything knowable before
    training that CTranslate2 cannot do."""
    problems: list[str] = []
    backend, precision = values["decoding_backend"], values["decoding_precision"]
    if precision == "float16" and backend != "transformers" and not _cuda_available():
        problems.append(f"{where('decoding_precision')}: float16 runs on CUDA only and this machine has no GPU; "
                        f"use float32, int8 or int8_float32")
    elif precision != "auto" and backend != "transformers":
        supported = _supported_compute_types()
        if precision not in supported:
            problems.append(f"{where('decoding_precision')}={precision} is not supported by CTranslate2 on this "
                            f"machine's {'GPU' if _cuda_available() else 'CPU'}; supported: "
                            f"{', '.join(sorted(supported))}")
    if backend == "transformers" and precision != "auto":
        problems.append(f"{where('decoding_precision')}={precision} sets CTranslate2's precision, but "
                        f"--decoding_backend=transformers never uses it; drop it (transformers decodes in "
                        f"--mixed_precision) or use --decoding_backend=auto or ctranslate2")
    if values["decode_compile"]:
        problems.append(f"{where('decode_compile')}=True: compiled decoding was retired: CTranslate2, the default "
                        f"engine, decodes faster without compiling (docs/speedups.md); drop it")
    if backend == "ctranslate2":
        problems.extend(f"{where('decoding_backend')}=ctranslate2: {why}" for why in _static_refusals(values))
    return problems


def _static_refusals(values: Mapping[str, Any]) -> list[str]:
    why = []
    model = str(values["model"]).lower()
    facts = FAMILIES.get(model)  # which --model names CTranslate2 cannot run: textbox.config.families
    unconvertible = facts is not None and not facts.ctranslate2
    if facts is not None and unconvertible:
        why.append(f"--model={model} is {facts.kind.what}, which CTranslate2 cannot run; use "
                   f"--decoding_backend=auto or transformers")
    methods = [name.lower() for name in values["efficient_methods"]]
    if any(method in PROMPT_METHODS for method in methods):
        why.append(f"--efficient_methods={methods}: virtual prompt tokens cannot be merged into the weights "
                   f"CTranslate2 runs (LoRA and IA3 can); use --decoding_backend=auto or transformers")
    model_type = _local_model_type(values["model_path"])
    if model_type is not None and model_type not in _CONVERTED_TYPES and not unconvertible:
        why.append(f"--model_path={values['model_path']} holds a {model_type!r} model; CTranslate2 converts "
                   f"{', '.join(_CONVERTED_TYPES)}; use --decoding_backend=auto or transformers")
    decoder_only: bool | None
    if facts is not None:
        decoder_only = facts.decoder_only
    else:
        decoder_only = None if model_type is None else model_type in CTRANSLATE2_GENERATOR_TYPES
    why.extend(f"--generation_kwargs: {problem}; use --decoding_backend=auto (falls back to transformers) or drop it"
               for problem in unsupported_settings(dict(values["generation_kwargs"]), decoder_only=decoder_only))
    return why


def _local_model_type(model_path: str | None) -> str | None:
    """model_type of a local checkpoint's config.json (an adapter's base is checked when it is loaded)."""
    if not model_path:
        return None
    config = Path(model_path).expanduser() / "config.json"
    if not config.is_file():
        return None
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError):
        return None


def _supported_compute_types() -> set[str]:
    import ctranslate2  # ~40 ms, no torch; only for an explicit precision

    return set(ctranslate2.get_supported_compute_types("cuda" if _cuda_available() else "cpu"))


def _cuda_available() -> bool:
    import ctranslate2  # only for float16, the one precision that depends on the device (no torch import)

    return ctranslate2.get_cuda_device_count() > 0


def choose_engine(model: DecodedModel, settings: Mapping[str, object], description: str, options: DecodingOptions,
                  tokenizer: PreTrainedTokenizerBase | None = None, choices: EngineChoices | None = None
                  ) -> EngineChoice:
    """The engine that decodes ``model`` with ``settings`` (after the options' backend), logged as
    EngineChoices.record says. An explicit ctranslate2 that cannot apply is an error naming what stands in the
    way. ``tokenizer``, when given, is checked for the end token the converted model needs."""

    choices = choices if choices is not None else _process_choices
    if options.backend == "transformers":
        return choices.record(EngineChoice("transformers", "--decoding_backend=transformers"))
    if options.backend == "auto" and description in choices.failures:
        return choices.record(choices.failures[description])
    obstacle: str | None
    if options.sharded:  # no process holds the whole model (config validation refuses an explicit ctranslate2)
        kind, obstacle = "", (f"the weights are split over the processes ({options.sharded}), and CTranslate2 "
                              f"converts a whole model")
    else:
        kind, obstacle = convertible(model, settings, tokenizer)
    if obstacle is None and options.backend == "auto":
        obstacle = _quantized_obstacle(model)
    if obstacle is None:
        return choices.record(EngineChoice(
            "ctranslate2", f"--decoding_backend={options.backend}: {_model_type(model)} converts "
                           f"({kind}){_note(model, settings)}", kind))
    if options.backend == "ctranslate2":
        raise TextBoxUserError(f"--decoding_backend=ctranslate2: {obstacle}; use --decoding_backend=auto "
                               f"(falls back to transformers) or transformers")
    unused = f" (--decoding_precision={options.precision} applies to CTranslate2 only)" \
        if options.precision != "auto" else ""
    return choices.record(EngineChoice("transformers", f"--decoding_backend={options.backend}: {obstacle}{unused}"))


def _quantized_obstacle(model: DecodedModel) -> str | None:
    """Why auto leaves a model with quantised (bitsandbytes) base weights to transformers: CTranslate2 would run
    them dequantised, with outputs that can differ from generate's on the quantised layers."""
    from textbox.decoding.ctranslate2_cache import quantization_method

    method = quantization_method(model)
    if method is None:
        return None
    return (f"the base weights are quantised ({method}, bitsandbytes), which CTranslate2 would run dequantised, so "
            f"that its outputs could differ from generate's on the quantised layers; --decoding_backend=ctranslate2 "
            f"converts the dequantised, merged model (faster; outputs may differ)")


def after_failure(why: str, description: str, options: DecodingOptions,
                  choices: EngineChoices | None = None) -> EngineChoice:
    """The engine once CTranslate2 failed on the model (``why``: its conversion, loading or a translation):
    transformers under auto, logged, and kept for this kind of decode for the rest of the run; an explicit
    ctranslate2 is an error naming why."""

    if options.backend == "ctranslate2":
        raise TextBoxUserError(f"--decoding_backend=ctranslate2: {why}; use --decoding_backend=auto (falls back to "
                               f"transformers) or transformers")
    choices = choices if choices is not None else _process_choices
    if not choices.keeps_failures:
        return choices.record(EngineChoice("transformers", f"--decoding_backend={options.backend}: {why}"))
    choices.failures[description] = EngineChoice("transformers", f"--decoding_backend={options.backend}: {why}; "
                                                                 f"this run's later {description} decodes stay "
                                                                 f"on transformers")
    return choices.record(choices.failures[description])


# Validation by generation converts the just-trained weights at every validation: the conversion costs less
# than the decoding time it saves on all but the smallest validation sets (docs/speedups.md, 'why validation
# converts'). Each process keeps only its latest validation conversion on disk
# (textbox.decoding.ctranslate2_cache.converted_model).


def convertible(model: DecodedModel, settings: Mapping[str, object], tokenizer: PreTrainedTokenizerBase | None = None
                ) -> tuple[str, str | None]:
    """("translator" | "generator", None) when CTranslate2 can decode ``model`` with ``settings`` (and the end
    token of ``tokenizer``, when given), else ("", why not)."""

    inner, why = _plain_model(model)
    if inner is None:
        return "", why
    model_type = _model_type(inner)
    if model_type in CTRANSLATE2_TRANSLATOR_TYPES and inner.config.is_encoder_decoder:
        kind = "translator"
    elif model_type in CTRANSLATE2_GENERATOR_TYPES and not inner.config.is_encoder_decoder:
        kind = "generator"
    elif model_type is None:
        return "", f"{type(inner).__name__} is not a Hugging Face model CTranslate2 converts"
    else:
        return "", (f"model type {model_type!r} ({type(inner).__name__}) has no CTranslate2 conversion here "
                    f"(it converts {', '.join(_CONVERTED_TYPES)})")
    problems = unsupported_settings(settings, inner.generation_config, decoder_start=_decoder_start(inner, kind),
                                    decoder_only=kind == "generator")
    if tokenizer is not None:
        from textbox.decoding.ctranslate2_cache import end_token_missing

        missing = end_token_missing(inner, tokenizer)
        problems.extend([f"this {model_type!r} model cannot be converted: {missing}"] if missing else [])
    if problems:
        return "", "; ".join(problems)
    return kind, None


def _note(model: DecodedModel, settings: Mapping[str, object]) -> str:
    inner, _ = _plain_model(model)
    if inner is None:  # an adapter CTranslate2 cannot merge: no search to describe
        return ""
    return stopping_note(effective_config(inner.generation_config, settings))


def _plain_model(model: DecodedModel) -> tuple[PreTrainedModel | None, str | None]:
    """The transformers model to convert (a LoRA/IA3 PeftModel is merged later, on a copy)."""
    from textbox.decoding.ctranslate2_cache import has_adapter

    if has_adapter(model):
        peft_config = model.active_peft_config
        peft_type = str(getattr(peft_config.peft_type, "value", peft_config.peft_type))
        if peft_type not in ("LORA", "IA3"):
            return None, (f"the {peft_type.lower().replace('_', '-')} adapter adds virtual tokens that cannot be "
                          f"merged into the weights CTranslate2 runs (LoRA and IA3 can)")
        # peft annotates the base as a torch Module: under a PeftModel built here it is a transformers model
        return model.get_base_model(), None  # type: ignore[return-value]
    return model, None


def _model_type(model: object) -> str | None:
    config = getattr(model, "config", None)
    return getattr(config, "model_type", None) if config is not None and hasattr(config, "to_dict") else None


def _decoder_start(model: PreTrainedModel, kind: str) -> int | None:
    return model.config.decoder_start_token_id if kind == "translator" else None
