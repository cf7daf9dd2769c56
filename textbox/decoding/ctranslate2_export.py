"""A checkpoint exported for CTranslate2 (``python -m textbox.export``): the converted model (the same conversion
the decoding cache makes, textbox.decoding.ctranslate2_cache.convert), the tokenizer's files beside it, the
checkpoint's generation_config.json, and, where the checkpoint's settings map to one plain CTranslate2 call
(textbox.decoding.ctranslate2_settings), that call's arguments in ``generation_arguments.json``, so that

    translator = ctranslate2.Translator(dir)          # ctranslate2.Generator for a decoder-only model
    translator.translate_batch(tokens, **json.load(open(dir + "/generation_arguments.json")))

decodes as the checkpoint's ``generate(**inputs)`` does. Where they do not map (a setting CTranslate2 has no equal
for, or a beam search under forced_eos_token_id, whose cut hypotheses textbox re-ranks after the call), the model is
still exported, the file is left out and the export says why. The directory is written whole or not at all.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textbox.config.errors import TextBoxUserError
from textbox.decoding.ctranslate2_cache import STORAGE_TYPES, convert, decoder_start_token, plain_model
from textbox.decoding.ctranslate2_settings import ctranslate2_call, unsupported_settings
from textbox.utils.atomic import atomic_directory

ARGUMENTS = "generation_arguments.json"
GENERATION_CONFIG = "generation_config.json"
if TYPE_CHECKING:
    from transformers import PreTrainedModel

QUANTIZATIONS = ("none", *STORAGE_TYPES)  # none: the weights' own type


@dataclass(frozen=True)
class Exported:
    """What an export wrote: the directory, the engine class that loads it, and why generation_arguments.json is
    absent ('' when written)."""

    directory: Path
    engine: str  # "Translator" or "Generator"
    no_arguments: str


def export_ctranslate2(model_path: Path, output: Path, quantization: str = "none") -> Exported:
    """Convert the checkpoint in ``model_path`` into the new directory ``output`` (see the module docstring);
    TextBoxUserError for a path or value to fix, CannotConvert when the converter fails on the model."""
    _check(model_path, output, quantization)
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(model_path)
        decoder_only = not getattr(config, "is_encoder_decoder", False)
        auto = AutoModelForCausalLM if decoder_only else AutoModelForSeq2SeqLM
        model = auto.from_pretrained(model_path).eval()
        tokenizer = AutoTokenizer.from_pretrained(model_path)
    except (OSError, ValueError) as error:
        raise TextBoxUserError(f"--model_path={model_path}: transformers cannot load a model and tokenizer from it "
                               f"({str(error).strip().splitlines()[0]})") from None
    with atomic_directory(output) as staging:
        converted = staging / "converted"
        convert(plain_model(model), tokenizer, converted, quantization)
        for file in converted.iterdir():  # the converted model's files at the top, beside the tokenizer's
            file.rename(staging / file.name)
        converted.rmdir()
        tokenizer.save_pretrained(staging)
        model.generation_config.save_pretrained(staging)
        kind = "generator" if decoder_only else "translator"
        why = _why_no_plain_call(model, staging, kind, decoder_only)
        if not why:
            call = ctranslate2_call(model.generation_config, kind, vocabulary_size=len(tokenizer))
            (staging / ARGUMENTS).write_text(json.dumps(call.arguments, indent=2, sort_keys=True) + "\n",
                                             encoding="utf-8")
    return Exported(output, "Generator" if decoder_only else "Translator", why)


def _check(model_path: Path, output: Path, quantization: str) -> None:
    if quantization not in QUANTIZATIONS:
        raise TextBoxUserError(f"--quantization={quantization!r} is not one of {', '.join(QUANTIZATIONS)}")
    if not (model_path / "config.json").is_file():
        also = (" (an adapter checkpoint: export one trained with efficient_unfreeze_model=True, or merge the "
                "adapter first)" if (model_path / "adapter_config.json").is_file() else "")
        raise TextBoxUserError(f"--model_path={model_path}: no config.json there, so no model to export "
                               f"(give a checkpoint directory such as saved/<run>/checkpoint_best){also}")
    if output.exists():
        raise TextBoxUserError(f"--output={output} exists: give a new directory (nothing is overwritten)")


def _why_no_plain_call(model: PreTrainedModel, directory: Path, kind: str, decoder_only: bool) -> str:
    """Why no one CTranslate2 call decodes as the checkpoint's generate ('' when one does)."""
    settings = model.generation_config
    problems = unsupported_settings({}, settings, model.config.decoder_start_token_id, decoder_only)
    if problems:
        return problems[0]
    if decoder_only and settings.max_new_tokens is None and settings.max_length is not None:
        return "a decoder-only max_length counts each prompt: the bound differs from prompt to prompt"
    call = ctranslate2_call(settings, kind)
    if call.rerank_cut:
        return ("a beam search under forced_eos_token_id: transformers ranks a hypothesis cut at the length bound "
                "with the end token it forces there, which textbox re-ranks after the call")
    if call.copies != 1:
        return "sampling with top_k=1 and several sequences: textbox copies the one CTranslate2 returns"
    if kind == "translator" and decoder_start_token(directory) is None:
        return "the converted model leaves the decoder start token to the caller (a target prefix)"
    return ""
