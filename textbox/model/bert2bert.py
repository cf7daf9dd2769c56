"""BERT2BERT and other encoder-decoder pairs: an EncoderDecoderModel warm-started from an encoder checkpoint
(--model_path) and a decoder checkpoint (--decoder_model_path; default: the same one, i.e. BERT2BERT).

The decoder gets new cross-attention layers (unless its checkpoint already has them), so a model built from two
checkpoints must be trained; a saved encoder-decoder checkpoint (e.g. a run's checkpoint_best) is reloaded as it
is. Sources and targets share one tokenizer, --model_path's: the decoder's vocabulary must be the same.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from transformers import (AutoConfig, AutoModelForCausalLM, AutoTokenizer, EncoderDecoderConfig,
                          EncoderDecoderModel)

from textbox.config import Config, TextBoxUserError
from textbox.config.families import ENCODER_DECODER
from textbox.config import family_keys as keys
from textbox.model.loading import (from_pretrained, load_config, load_model, load_tokenizer, set_generation_length,
                                   set_special_token_ids)
from textbox.model.built_model import BuiltModel, TrainingTexts
from textbox.utils.logging import get_logger

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase


def build(config: Config, train_split: TrainingTexts | None) -> BuiltModel:
    """Reload a saved encoder-decoder, or warm-start one from an encoder (config_kwargs apply to both halves);
    from_scratch keeps the architectures and initialises new weights."""
    path = config.model_path
    tokenizer = load_tokenizer(path, config.tokenizer_kwargs)
    saved_config = from_pretrained(AutoConfig.from_pretrained, path)
    if saved_config.model_type == "encoder-decoder":
        keys.refuse_unhonoured(config, ENCODER_DECODER, keys.CHECKPOINT)  # validation could not read a hub id
        _apply_to_halves(saved_config, config.config_kwargs)
        return BuiltModel(load_model(EncoderDecoderModel, path, saved_config, config.from_scratch), tokenizer)
    if saved_config.is_encoder_decoder:
        raise TextBoxUserError(f"--model_path={path} holds a {saved_config.model_type!r} encoder-decoder; "
                               f"load it with --model={saved_config.model_type} (bert2bert needs an encoder)")
    keys.refuse_unhonoured(config, ENCODER_DECODER, keys.ENCODERS)
    if train_split is None:
        raise TextBoxUserError(f"--model={config.model} from the encoder {path} has an untrained decoder: use "
                               f"--do_train=True, or --model_path=<a run's checkpoint_best> to test a trained one")
    decoder_path = config.decoder_model_path or path
    decoder_config = load_config(decoder_path, config.config_kwargs)
    if decoder_path != path:
        _check_decoder(decoder_path, decoder_config, tokenizer)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    if cls is None or sep is None or tokenizer.pad_token_id is None:
        raise TextBoxUserError(f"--model_path={path}: bert2bert needs a tokenizer with [CLS], [SEP] and [PAD] "
                               f"tokens (they start, end and pad targets); this one lacks some")
    encoder_config = load_config(path, config.config_kwargs)
    if config.from_scratch:
        model = EncoderDecoderModel(EncoderDecoderConfig.from_encoder_decoder_configs(encoder_config, decoder_config))
    else:
        decoder = _load_decoder(decoder_path, decoder_config, named_by="--decoder_model_path"
                                if config.decoder_model_path else "--model_path")
        model = from_pretrained(EncoderDecoderModel.from_encoder_decoder_pretrained, path,
                                encoder_config=encoder_config, decoder_model=decoder)
    model.config.vocab_size = model.config.decoder.vocab_size
    set_special_token_ids(model, decoder_start_token_id=cls, bos_token_id=cls, eos_token_id=sep,
                          pad_token_id=tokenizer.pad_token_id)
    set_generation_length(model, config.tgt_len)
    # new cross-attention: efficient methods alone would leave it random (textbox.model.efficient refuses them)
    return BuiltModel(model, tokenizer, warm_started=True)


def _load_decoder(decoder_path: str, decoder_config: PretrainedConfig, named_by: str) -> PreTrainedModel:
    """The decoder half, switched to causal attention with cross-attention, and a console line naming the weights
    its checkpoint lacks: they start from random values (transformers' load report goes to project.log only, and a
    researcher should know which part of a warm-started model is not pretrained)."""
    decoder_config.is_decoder = True
    decoder_config.add_cross_attention = True
    decoder, loading_info = from_pretrained(AutoModelForCausalLM.from_pretrained, decoder_path, named_by=named_by,
                                            config=decoder_config, output_loading_info=True)
    missing = sorted(loading_info.get("missing_keys", ()))
    if missing:
        get_logger().info(f"bert2bert: {len(missing)} decoder weights are not in {decoder_path} and start from "
                          f"random values, to be learnt in this run: {new_weight_groups(missing)}")
    return decoder


def new_weight_groups(names: list[str]) -> str:
    """'bert.encoder.layer.*.crossattention (96), cls.predictions (7)': weight names grouped by module, layer
    numbers folded into *, so that the line stays one line for a 24-layer model."""
    counts: dict[str, int] = {}
    for name in names:
        parts = re.sub(r"\.\d+(?=\.|$)", ".*", name).split(".")
        depth = parts.index("*") + 2 if "*" in parts else 2  # the module under the layer, or a top-level head
        module = ".".join(parts[:depth])
        counts[module] = counts.get(module, 0) + 1
    return ", ".join(f"{module} ({count})" for module, count in counts.items())


def _apply_to_halves(saved_config: EncoderDecoderConfig, settings: dict[str, object]) -> None:
    """--config_kwargs over a saved pair: each setting goes to the halves that have it; one that neither half has
    is an error (as for a warm start, where each half's config refuses unknown settings)."""
    halves = (saved_config.encoder, saved_config.decoder)
    unknown = sorted(name for name in settings if not any(name in half.to_dict() for half in halves))
    if unknown:
        raise TextBoxUserError(f"--config_kwargs: {', '.join(unknown)} "
                               f"{'is not a setting' if len(unknown) == 1 else 'are not settings'} of either half "
                               f"({halves[0].model_type!r}, {halves[1].model_type!r}); check the spelling")
    for half in halves:
        for name, value in settings.items():
            if name in half.to_dict():
                setattr(half, name, value)


def _check_decoder(decoder_path: str, decoder_config: PretrainedConfig, tokenizer: PreTrainedTokenizerBase) -> None:
    """The decoder reads and predicts ids of --model_path's tokenizer: its vocabulary must be that one."""
    if decoder_config.is_encoder_decoder:
        raise TextBoxUserError(f"--decoder_model_path={decoder_path} holds a {decoder_config.model_type!r} "
                               f"encoder-decoder; give an encoder or decoder checkpoint (e.g. a BERT or GPT-2)")
    vocab_size = getattr(decoder_config, "vocab_size", None)
    if vocab_size is not None and vocab_size < len(tokenizer):
        raise TextBoxUserError(f"--decoder_model_path={decoder_path} has {vocab_size} embeddings but the tokenizer "
                               f"of --model_path has {len(tokenizer)} tokens; sources and targets share that "
                               f"tokenizer, so the decoder needs the same vocabulary")
    if (Path(decoder_path) / "tokenizer_config.json").is_file():
        own = from_pretrained(AutoTokenizer.from_pretrained, decoder_path)
        if own.get_vocab() != tokenizer.get_vocab():
            raise TextBoxUserError(f"--decoder_model_path={decoder_path} comes with a tokenizer whose vocabulary "
                                   f"differs from --model_path's; sources and targets share --model_path's "
                                   f"tokenizer, so the decoder must use the same vocabulary")
