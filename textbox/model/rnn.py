"""RNN encoder-decoder baselines (``--model=rnn|gru|lstm``) with attention, trained from scratch: the builder.

The tokenizer is the ``transformer`` model's: a byte-level BPE trained on the training split (and cached). The
model is split by job: its config (textbox.model.rnn_config), its layers (textbox.model.rnn_layers, where the
architecture is described) and the transformers model that joins them and generates (textbox.model.rnn_model).
"""
from __future__ import annotations

from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from textbox.config import Config, TextBoxUserError
from textbox.config.family_keys import RNN_SETTINGS, TOKENIZER_FACTS, config_settings
from textbox.model.loading import (from_pretrained, load_config, load_model, set_generation_length,
                                   set_special_token_ids)
from textbox.model.built_model import BuiltModel, TrainingTexts
from textbox.model.rnn_config import RNNSeq2SeqConfig
from textbox.model.rnn_model import RNNSeq2SeqModel, register_auto_classes

# The settings config_kwargs may change (configs/model/<cell>.yaml documents them); the cell comes from --model.
SIZE_SETTINGS = RNN_SETTINGS


def build(config: Config, train_split: TrainingTexts | None) -> BuiltModel:
    """Reload ``config.model_path`` (an RNN checkpoint, e.g. a run's checkpoint_best) or train the transformer
    model's BPE tokenizer on ``train_split`` and build a fresh model whose cell is ``config.model``."""
    cell = config.model.lower()
    if config.model_path:  # the config_kwargs the user set apply over the checkpoint's (textbox.config.family_keys)
        register_auto_classes()  # the checkpoint loads through AutoConfig / AutoModelForSeq2SeqLM
        settings = config_settings(config, "config_kwargs")
        model_config = load_config(config.model_path, settings)
        if not isinstance(model_config, RNNSeq2SeqConfig):
            raise TextBoxUserError(f"--model_path={config.model_path} holds a {model_config.model_type!r} model, "
                                   f"not an RNN encoder-decoder; give the checkpoint of an rnn/gru/lstm run or "
                                   f"choose the --model that matches it")
        if model_config.cell != cell:
            raise TextBoxUserError(f"--model_path={config.model_path} is a {model_config.cell} model, not "
                                   f"{cell}: use --model={model_config.cell}")
        try:
            model_config.validate_settings()
        except ValueError as error:
            raise TextBoxUserError(f"--config_kwargs of the {config.model} model: {error}") from error
        model = load_model(AutoModelForSeq2SeqLM, config.model_path, model_config, config.from_scratch)
        return BuiltModel(model, from_pretrained(AutoTokenizer.from_pretrained, config.model_path))
    if train_split is None:
        raise TextBoxUserError(f"model {cell!r} starts untrained: use --do_train=True to train it, or "
                               f"--model_path=<a run's checkpoint directory, e.g. saved/<run>/checkpoint_best> "
                               f"to test a trained one")
    from textbox.model.transformer import check_tokenizer_facts, new_model_tokenizer

    model_config = rnn_config(config, vocab_size=0)  # settings checked before the tokenizer is trained
    tokenizer = new_model_tokenizer(config, train_split)
    check_tokenizer_facts(config.config_kwargs, tokenizer)
    model_config = rnn_config(config, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                              decoder_start_token_id=tokenizer.eos_token_id)  # as the transformer (BART) does
    model = RNNSeq2SeqModel(model_config)
    set_special_token_ids(model, pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                          eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.eos_token_id)
    set_generation_length(model, config.tgt_len)
    return BuiltModel(model, tokenizer)


def rnn_config(config: Config, vocab_size: int, **ids: int | None) -> RNNSeq2SeqConfig:
    """The model config of ``--model`` (the cell) with ``config_kwargs`` (configs/model/<cell>.yaml holds the
    defaults, merged key by key with the user's); an unknown or unusable setting is a TextBoxUserError."""
    settings = {key: value for key, value in config.config_kwargs.items() if key not in TOKENIZER_FACTS}
    if "cell" in settings:
        raise TextBoxUserError("--config_kwargs: 'cell' is chosen by the model name: use --model=rnn, gru or lstm")
    unknown = sorted(set(settings) - set(SIZE_SETTINGS))
    if unknown:
        raise TextBoxUserError(f"--config_kwargs: {', '.join(unknown)} "
                               f"{'is not a setting' if len(unknown) == 1 else 'are not settings'} of the "
                               f"{config.model} model; it takes {', '.join(SIZE_SETTINGS)}")
    try:
        return RNNSeq2SeqConfig(vocab_size=max(vocab_size, 1), cell=config.model.lower(), **settings, **ids)
    except ValueError as error:
        raise TextBoxUserError(f"--config_kwargs of the {config.model} model: {error}") from error
