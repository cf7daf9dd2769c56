"""Which model-related keys each model family's builder honours: one declared table, checked before any build.

The rule is that no key is ever silently ignored. Each family (a registry entry's ``family``) declares, for each
situation its builder meets (a new model, a checkpoint reloaded, encoders to warm-start from), every key it
honours and, for every key it cannot honour, a refusal that says what to do. ``problems`` turns a configuration
into the refusals that apply (config validation calls it, so they come before anything is built or written);
``refuse_unhonoured`` is the same check for a builder that only learns its situation on loading (a hub id whose
config could not be read during validation). docs/model_keys.md is ``render_table()``.

A key counts as *set* when it differs from its schema default and from the value the family's own yaml
(configs/model/<model>.yaml) gives it: that yaml describes a new model (the transformer's sizes, its BPE
settings), so its values are not a request to change a checkpoint. For dict keys the settings are compared one
by one (``set_settings``): ``--config_kwargs={'dropout': 0.2}`` sets dropout only, even though the merged dict
also holds the yaml's sizes.

Standard library only (plus yaml): textbox.model.checks imports this module.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ItemsView, Mapping, Protocol

import yaml

from textbox.config.errors import ConfigError
from textbox.config.families import CAUSAL_LM, ENCODER_DECODER, FAMILIES, KINDS, RNN, SEQ2SEQ, TRANSFORMER, yaml_names
from textbox.config.layers import CONFIG_DIR
from textbox.config.schema import DEFAULTS, PROMPT_METHODS, ConfigValue
from textbox.utils import yaml_numbers

HONOURED = "honoured"

# Situations: what --model_path holds for the family's builder.
NEW = "new model"  # no --model_path: a model built from nothing (transformer, rnn/gru/lstm)
CHECKPOINT = "checkpoint"  # --model_path: a saved model of the family, loaded (or re-initialised: from_scratch)
ENCODERS = "encoder checkpoints"  # bert2bert / encoder_decoder warm-started from an encoder (and a decoder)

# Chat templates (textbox.data.chat): how a decoder-only model reads an example; an encoder-decoder reads the source
# as its input, with no turns to render.
CHAT_KEYS = ("use_chat_template", "chat_template", "system_prompt")
# In-context demonstrations (textbox.data.shots): written before a decoder-only model's prompt.
SHOT_KEYS = ("num_shots", "shot_selection")
# The keys the table covers, in the order of docs/model_keys.md. efficient_methods is split by method kind:
# families differ on peft's layer methods, its prompt methods and BitFit.
LORA_IA3, PROMPTS, BITFIT = "efficient_methods: lora/ia3", "efficient_methods: prompt methods", \
    "efficient_methods: bitfit"
TABLE_KEYS = ("from_scratch", "config_kwargs", "tokenizer_kwargs", "decoder_model_path", LORA_IA3, PROMPTS, BITFIT,
              "pretrain_task", "label_smoothing", "gradient_checkpointing", "quantization", "attn_implementation",
              *CHAT_KEYS, *SHOT_KEYS, "packing")

# Settings of the BPE tokenizer that transformer and rnn/gru/lstm train (textbox.model.tokenizer).
BPE_SETTINGS = ("vocab_size", "min_frequency")
# The settings config_kwargs may change in an RNN (configs/model/<cell>.yaml documents them).
RNN_SETTINGS = ("embedding_size", "hidden_size", "num_layers", "bidirectional", "dropout", "attention",
                "tie_embeddings")
# What a new model takes from its tokenizer; config_kwargs may restate them (TextBox 2.0's model yamls do), and the
# builder checks that they agree (textbox.model.transformer.check_tokenizer_facts).
TOKENIZER_FACTS = ("vocab_size", "pad_token_id", "bos_token_id", "eos_token_id")
# The denoising knobs (textbox.data.denoising), read only with pretrain_task=denoising.
DENOISING_KEYS = ("mask_ratio", "poisson_lambda", "permute_sentence_ratio")


class SourcedConfig(Protocol):
    """A Config as these checks read it (the loader imports this module, so not the class itself)."""

    def items(self) -> ItemsView[str, ConfigValue]: ...

    def source_of(self, name: str) -> str: ...


@dataclass(frozen=True)
class Refusal:
    """Why a key cannot be honoured and what to do instead; ``unless`` waives it (e.g. a setting that makes
    it possible). ``message`` may name {model} and {path}."""

    message: str
    unless: Callable[[Mapping[str, ConfigValue]], bool] | None = None
    unless_text: str = ""  # the waiving setting, for the table


Support = str | Refusal  # HONOURED or a Refusal

_NO_DECODER = Refusal("is for --model=encoder_decoder (or bert2bert), which pairs an encoder with a decoder "
                      "checkpoint; --model={model} has no separate decoder: drop it")
_RELOADED_TOKENIZER = Refusal("sets how --model={model} trains a new BPE tokenizer, but --model_path={path} "
                              "comes with its own, used as saved: drop --tokenizer_kwargs (or drop --model_path to "
                              "train a new model)")
_RNN_PEFT = Refusal("with lora/ia3 needs the layers to adapt, and peft has no default ones for an RNN: name them "
                    "with --efficient_kwargs={{'target_modules': [...]}} (its linear layers: memory, bridge, "
                    "attention_key, combine), or use --efficient_methods=['bitfit']",
                    unless=lambda values: "target_modules" in values["efficient_kwargs"],
                    unless_text="efficient_kwargs names target_modules")
_RNN_PROMPTS = Refusal("with a prompt method cannot apply: peft's prompt methods feed virtual tokens to attention "
                       "layers, which an RNN has not: use --efficient_methods=['bitfit'] (or ['lora'] with "
                       "target_modules)")
_NEW_CROSS_ATTENTION = Refusal("would leave the new, random cross-attention of a model warm-started from encoder "
                               "checkpoints untrained: add --efficient_unfreeze_model=True, or fine-tune it first "
                               "and tune its checkpoint_best",
                               unless=lambda values: values["efficient_unfreeze_model"],
                               unless_text="efficient_unfreeze_model=True")
_NEW_WEIGHTS = Refusal("quantises the weights of a pretrained checkpoint, and a new --model={model} has random "
                       "ones: give --model_path=<its checkpoint> or drop --quantization")
_RNN_QUANTIZATION = Refusal("quantises the linear layers of transformers models (bitsandbytes through "
                            "transformers' loader); an RNN's recurrent weights are not: drop --quantization")
_RNN_ATTENTION = Refusal("chooses between transformers' attention implementations; an RNN computes its own "
                         "attention (--config_kwargs={{'attention': 'luong'|'bahdanau'|'none'}}): drop "
                         "--attn_implementation")
_PAIR_QUANTIZATION = Refusal("is not provided for EncoderDecoderModel pairs (their halves load through "
                             "EncoderDecoderModel, which does not quantise here): drop --quantization")
_NO_DENOISING = Refusal("trains an encoder-decoder to rebuild its input; --model={model} is decoder-only: "
                        "drop --pretrain_task or choose an encoder-decoder model")

_NO_CHAT = Refusal("renders examples as chat turns for a decoder-only model; --model={model} reads the source as "
                   "its encoder's input: drop it (or choose a decoder-only model)")
_NO_SHOTS = Refusal("puts demonstrations before a decoder-only model's prompt (in-context learning); --model={model} "
                    "is an encoder-decoder: drop it (or choose a decoder-only model)")
_NO_PACKING = Refusal("packs several examples into one row of a decoder-only model (position ids restarting per "
                      "example); --model={model} is an encoder-decoder, whose batches are padded: drop --packing")
_FROM_NOTHING: dict[str, Support] = {
    "from_scratch": HONOURED, "config_kwargs": HONOURED, "tokenizer_kwargs": HONOURED,
    "decoder_model_path": _NO_DECODER, LORA_IA3: HONOURED, PROMPTS: HONOURED, BITFIT: HONOURED,
    "pretrain_task": HONOURED, "label_smoothing": HONOURED, "gradient_checkpointing": HONOURED,
    "quantization": HONOURED, "attn_implementation": HONOURED, **{key: _NO_CHAT for key in CHAT_KEYS},
    **{key: _NO_SHOTS for key in SHOT_KEYS},
    "packing": _NO_PACKING,
}
_RNN = {LORA_IA3: _RNN_PEFT, PROMPTS: _RNN_PROMPTS, "quantization": _RNN_QUANTIZATION,
        "attn_implementation": _RNN_ATTENTION}

SUPPORT: dict[str, dict[str, dict[str, Support]]] = {
    TRANSFORMER: {
        NEW: {**_FROM_NOTHING, "quantization": _NEW_WEIGHTS},
        CHECKPOINT: {**_FROM_NOTHING, "tokenizer_kwargs": _RELOADED_TOKENIZER},
    },
    RNN: {
        NEW: {**_FROM_NOTHING, **_RNN},
        CHECKPOINT: {**_FROM_NOTHING, **_RNN, "tokenizer_kwargs": _RELOADED_TOKENIZER},
    },
    SEQ2SEQ: {CHECKPOINT: _FROM_NOTHING},
    CAUSAL_LM: {CHECKPOINT: {**_FROM_NOTHING, "pretrain_task": _NO_DENOISING,
                             **{key: HONOURED for key in (*CHAT_KEYS, *SHOT_KEYS)}, "packing": HONOURED}},
    ENCODER_DECODER: {
        ENCODERS: {**_FROM_NOTHING, "decoder_model_path": HONOURED, LORA_IA3: _NEW_CROSS_ATTENTION,
                   PROMPTS: _NEW_CROSS_ATTENTION, BITFIT: _NEW_CROSS_ATTENTION, "quantization": _PAIR_QUANTIZATION},
        CHECKPOINT: {**_FROM_NOTHING, "quantization": _PAIR_QUANTIZATION, "decoder_model_path": Refusal(
            "is the decoder to warm-start from, but --model_path={path} is a saved encoder-decoder that holds its "
            "decoder already: drop --decoder_model_path (or give encoder checkpoints to warm-start a new pair)")},
    },
}

if set(SUPPORT) != set(KINDS):  # a kind added to the family table without its row is a programming error
    raise ValueError(f"kinds without key support: {sorted(set(KINDS) - set(SUPPORT))}")

# What "honoured" means where it is not obvious (docs/model_keys.md prints these under the table).
NOTES = {
    (TRANSFORMER, CHECKPOINT, "from_scratch"): "the checkpoint's architecture and tokenizer, new weights",
    (TRANSFORMER, CHECKPOINT, "config_kwargs"): "the settings you set apply over the checkpoint's config "
                                                  "(a size change is an error); the yaml's sizes do not",
    (TRANSFORMER, NEW, "tokenizer_kwargs"): "vocab_size and min_frequency of the trained BPE; others refused",
    (RNN, NEW, "config_kwargs"): f"{', '.join(RNN_SETTINGS)}; others refused",
    (RNN, CHECKPOINT, "config_kwargs"): "the settings you set apply over the checkpoint's config",
    (TRANSFORMER, CHECKPOINT, "quantization"): "with an efficient method on top (textbox/model/quantization.py)",
    (SEQ2SEQ, CHECKPOINT, "quantization"): "with an efficient method on top",
    (CAUSAL_LM, CHECKPOINT, "quantization"): "with an efficient method on top",
    (RNN, NEW, "gradient_checkpointing"): "each encoder layer and the decoder",
    (RNN, CHECKPOINT, "gradient_checkpointing"): "each encoder layer and the decoder",
    (ENCODER_DECODER, ENCODERS, "from_scratch"): "both halves' architectures, new weights",
    (ENCODER_DECODER, ENCODERS, "config_kwargs"): "applied to both halves",
    (ENCODER_DECODER, CHECKPOINT, "config_kwargs"): "applied to both halves of the saved pair",
}


def supports(family: str, model: str, current: str) -> dict[str, Support]:
    """What ``--model=<model>`` of kind ``family`` honours in situation ``current``: its kind's row, or for a
    family a --user_dir module registered (textbox.register_model), the keys it declared (the others refused)."""
    row = SUPPORT[family][current]
    entry = FAMILIES.get(model)
    if entry is None or entry.honours is None:
        return row
    refusal = Refusal(f"is not honoured by --model={model}'s builder (registered by --user_dir, which declares the "
                      f"keys it honours: docs/extending.md): drop it")
    return {key: HONOURED if key in entry.honours else refusal for key in row}


def situation(family: str, values: Mapping[str, ConfigValue]) -> str | None:
    """Which situation of ``family``'s builder this config puts it in; None when that depends on a checkpoint
    that cannot be read here (a hub id): the builder then checks with ``refuse_unhonoured``."""
    path = values["model_path"]
    if path and (Path(path).expanduser() / "config.yaml").is_file() and \
            not (Path(path).expanduser() / "config.json").is_file():
        return None  # a run directory: continued with its own config.yaml, which is checked when loaded
    if KINDS[family].builds_new:
        return CHECKPOINT if path else NEW
    if family != ENCODER_DECODER:
        return CHECKPOINT
    if not path:
        return None
    directory = Path(path).expanduser()
    if (directory / "adapter_config.json").is_file() or (directory / "bitfit_config.json").is_file():
        return CHECKPOINT  # efficient tuning of a warm-started pair needs it saved first
    try:
        model_type = json.loads((directory / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None  # a hub id, or a damaged file that loading reports by name
    return CHECKPOINT if model_type == "encoder-decoder" else ENCODERS


def family_yaml_values(model: str) -> dict[str, ConfigValue]:
    """The values configs/model/<model>.yaml gives (empty when it has none or cannot be read)."""

    paths = [CONFIG_DIR / "model" / f"{name}.yaml" for name in yaml_names(model)]
    try:
        loaded = yaml_numbers.load(next(path for path in paths if path.is_file()).read_text(encoding="utf-8"))
    except (StopIteration, OSError, yaml.YAMLError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def set_settings(values: Mapping[str, ConfigValue], sources: Mapping[str, str], name: str) -> dict[str, ConfigValue]:
    """The entries of dict key ``name`` that were asked for: not the default and not the family yaml's."""
    value = values[name]
    if sources.get(name, "default") == "default":
        return {}

    given = family_yaml_values(values["model"]).get(name)
    given = {**DEFAULTS[name], **(given if isinstance(given, dict) else {})}
    return {key: item for key, item in value.items() if key not in given or given[key] != item}


def config_settings(config: SourcedConfig, name: str) -> dict[str, ConfigValue]:
    """``set_settings`` of a Config (what a builder applies over a checkpoint's own settings)."""
    values = dict(config.items())
    return set_settings(values, {key: config.source_of(key) for key in values}, name)


def is_set(values: Mapping[str, ConfigValue], sources: Mapping[str, str], name: str) -> bool:
    """Whether key ``name`` was asked for (see the module docstring)."""

    if isinstance(values[name], dict):
        return bool(set_settings(values, sources, name))
    if values[name] == DEFAULTS[name] or sources.get(name, "default") == "default":
        return False
    yaml_values = family_yaml_values(values["model"])
    return name not in yaml_values or yaml_values[name] != values[name]


def problems(family: str, values: Mapping[str, ConfigValue], sources: Mapping[str, str],
             where: Callable[[str], str], known_situation: str | None = None) -> list[str]:
    """Every key set in ``values`` that ``family``'s builder cannot honour, as messages naming the key, the
    model and what to do; plus settings outside the fixed sets the new-model builders take."""
    found = []
    for key in DENOISING_KEYS:
        if values["pretrain_task"] is None and is_set(values, sources, key):
            found.append(f"{where(key)} is a setting of denoising pre-training and is read only with "
                         f"--pretrain_task=denoising: add it, or drop --{key}")
    tokenizer_path, model_path = values["tokenizer_path"], values["model_path"]
    if tokenizer_path and (model_path or not KINDS[family].builds_new) and tokenizer_path != model_path:
        found.append(f"{where('tokenizer_path')}={tokenizer_path!r}: the tokenizer comes with --model_path="
                     f"{model_path} here; tokenizer_path chooses the tokenizer of a new transformer or rnn/gru/lstm "
                     f"model only: drop it")
    current = known_situation or situation(family, values)
    if current is None:
        return found
    model, path = values["model"].lower(), values["model_path"]
    for key, support in supports(family, model, current).items():
        if isinstance(support, Refusal) and _asked(key, values, sources) and \
                not (support.unless and support.unless(values)):
            name = key.split(":")[0]
            found.append(f"{where(name)} {support.message.format(model=model, path=path)} "
                         f"[--model={model}, {current}]")
    found.extend(_settings_problems(family, current, values, sources, where))
    return found


def refuse_unhonoured(config: SourcedConfig, family: str, known_situation: str) -> None:
    """The builder's own check, once loading has shown its situation: a TextBoxUserError listing the refusals."""

    values = dict(config.items())
    sources = {key: config.source_of(key) for key in values}
    found = problems(family, values, sources, lambda name: f"--{name}", known_situation)
    if found:
        raise ConfigError(found)


def _asked(key: str, values: Mapping[str, ConfigValue], sources: Mapping[str, str]) -> bool:
    methods = [method.lower() for method in values["efficient_methods"]]
    if key == LORA_IA3:
        return any(method in ("lora", "ia3") for method in methods)
    if key == PROMPTS:
        return any(method in PROMPT_METHODS for method in methods)
    if key == BITFIT:
        return "bitfit" in methods
    if key == "from_scratch":
        return bool(values[key])
    if key in ("decoder_model_path", "pretrain_task"):
        return values[key] is not None
    return is_set(values, sources, key)


def _settings_problems(family: str, current: str, values: Mapping[str, ConfigValue], sources: Mapping[str, str],
                       where: Callable[[str], str]) -> list[str]:
    """Dict keys whose accepted settings are a fixed list: an unknown one is refused by name, before the build."""
    found = []
    if KINDS[family].builds_new and current == NEW and not values["tokenizer_path"]:  # it trains its BPE
        unknown = sorted(key for key, value in values["tokenizer_kwargs"].items()
                         if key not in BPE_SETTINGS and not (key == "use_fast" and value is True))
        if unknown:
            found.append(f"{where('tokenizer_kwargs')}: {', '.join(unknown)} not understood by the BPE tokenizer "
                         f"that --model={values['model'].lower()} trains; it takes {' and '.join(BPE_SETTINGS)}")
        for key, least in (("vocab_size", 1), ("min_frequency", 0)):  # the trainer's types, checked before it runs
            value = values["tokenizer_kwargs"].get(key, least)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                found.append(f"{where('tokenizer_kwargs')}: {key} of the BPE tokenizer that --model="
                             f"{values['model'].lower()} trains must be an integer of at least {least}, got "
                             f"{type(value).__name__} {value!r}")
    if family == RNN:
        settings = values["config_kwargs"] if current == NEW else set_settings(values, sources, "config_kwargs")
        if "cell" in settings:
            found.append(f"{where('config_kwargs')}: 'cell' is chosen by the model name: use --model=rnn, gru "
                         f"or lstm")
        unknown = sorted(set(settings) - set(RNN_SETTINGS) - set(TOKENIZER_FACTS) - {"cell"})
        if unknown:
            found.append(f"{where('config_kwargs')}: {', '.join(unknown)} "
                         f"{'is not a setting' if len(unknown) == 1 else 'are not settings'} of the "
                         f"{values['model'].lower()} model; it takes {', '.join(RNN_SETTINGS)}")
    return found


def render_table() -> str:
    """docs/model_keys.md's table: one row per (family, situation), one column per key."""
    lines = ["| family (--model) | situation | " + " | ".join(TABLE_KEYS) + " |",
             "|---|---|" + "---|" * len(TABLE_KEYS)]
    for family, situations in SUPPORT.items():
        for current, supports in situations.items():
            cells = []
            for key in TABLE_KEYS:
                support = supports[key]
                if isinstance(support, Refusal):
                    cell = f"refused unless {support.unless_text}" if support.unless else "**refused**"
                else:
                    cell = "yes"
                if (family, current, key) in NOTES:
                    cell += f" ({NOTES[(family, current, key)]})"
                cells.append(cell)
            lines.append(f"| {family} | {current} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
