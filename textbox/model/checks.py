"""What the model registry checks in a configuration, before anything is built: a known model with the paths it
needs, undamaged checkpoint files, only keys its builder honours, a usable parameter-efficient method.

Why a module of its own: the config package (below model/) cannot know the models; textbox/checks.py calls
``problems`` with the other registries' checks. Nothing heavy is imported (no torch, no transformers).
"""
from __future__ import annotations

from textbox.config import Config
from textbox.config.families import FAMILIES, REFUSED_MODELS
from textbox.config import family_keys as keys
from textbox.model import quantization
from textbox.model.adapter_files import is_efficient_checkpoint
from textbox.model.efficient import method_problems
from textbox.model.files import damaged_files
from textbox.model.kwargs_types import config_kwargs_problems, efficient_kwargs_problems
from textbox.tokens import chat, languages
from textbox.utils.paths import missing_local_path
from textbox.utils.suggest import suggest

def problems(config: Config) -> list[str]:
    """Every problem of ``config``'s model keys (empty when the model can be built as asked)."""
    return [*_model_problems(config), *_efficient_problems(config), *_pretraining_problems(config),
            *languages.problems(config, config.where), *_quantization_problems(config), *_chat_problems(config)]


def _chat_problems(config: Config) -> list[str]:
    """Chat templates and messages data (textbox.tokens.chat), once the model is known."""
    name = config["model"].lower()
    return chat.problems(config, FAMILIES[name].decoder_only, config.where) if name in FAMILIES else []


def _model_problems(config: Config) -> list[str]:
    """A known model with the paths it needs, and no key set that its builder cannot honour
    (textbox/config/family_keys.py declares, per family, what each builder honours)."""
    where = config.where
    name = config["model"].lower()
    if name in REFUSED_MODELS:
        return [f"{where('model')}: TextBox 2.0's model {config['model']!r} is not provided: {REFUSED_MODELS[name]}"]
    if name not in FAMILIES:
        return [f"{where('model')}: unknown model {config['model']!r}{suggest(name, FAMILIES)}; "
                f"available: {', '.join(sorted(FAMILIES))} (a --user_dir module may register more: "
                f"docs/extending.md)"]
    found = []
    path = config["model_path"]
    if FAMILIES[name].needs_model_path and not path:
        found.append(f"{where('model')}: model {name!r} needs --model_path=<hub id or local directory>")
    if path and missing_local_path(path):
        found.append(f"{where('model_path')}: directory {path} does not exist")
        return found
    for key in ("model_path", "decoder_model_path"):  # found before a run directory exists; the loader names
        damaged = damaged_files(config[key]) if config[key] else []  # any other file it cannot read
        if damaged:
            found.append(f"{where(key)}: {'; '.join(damaged)}; the checkpoint is damaged (e.g. an interrupted "
                         f"copy or a full disk): restore it from a copy, or write it again")
    sources = {key: config.source_of(key) for key in config}
    family = FAMILIES[name].kind.name
    found.extend(keys.problems(family, config, sources, where))
    values = dict(config.items())
    found.extend(config_kwargs_problems(family, keys.situation(family, values), values, sources, where))
    return found


def _efficient_problems(config: Config) -> list[str]:
    """Parameter-efficient tuning (textbox/model/efficient.py) and encoder-decoder pairs."""
    where = config.where
    methods = list(config["efficient_methods"])
    found = [f"{where('efficient_methods')}: {problem}" for problem in method_problems(methods)]
    if config["efficient_unfreeze_model"] and not methods:
        found.append(f"{where('efficient_unfreeze_model')} needs --efficient_methods (without a method the "
                     f"whole model trains anyway)")
    if config["efficient_kwargs"] and not methods:
        found.append(f"{where('efficient_kwargs')} needs --efficient_methods=[<method>] to apply to")
    if methods and not config["efficient_unfreeze_model"] and (not config["model_path"] or config["from_scratch"]):
        found.append(f"{where('efficient_methods')} tune a pretrained model that loads again from --model_path "
                     f"(only the tuned parameters are saved): give --model_path without --from_scratch=True, "
                     f"or add --efficient_unfreeze_model=True to train and save the whole model")
    if not method_problems(methods):
        found.extend(efficient_kwargs_problems(dict(config.items()), where))
    if methods and methods[0].lower() == "bitfit" and config["efficient_kwargs"]:
        found.append(f"{where('efficient_kwargs')}: bitfit takes no settings, got {config['efficient_kwargs']}")
    if methods and config["do_train"] and is_efficient_checkpoint(config["model_path"]):
        found.append(f"{where('efficient_methods')}: --model_path={config['model_path']} holds an efficient "
                     f"checkpoint already, which continues training as it is; drop --efficient_methods (or "
                     f"give its base model as --model_path)")
    if methods and config["tokenizer_add_tokens"] and not config["efficient_unfreeze_model"]:
        found.append(f"{where('tokenizer_add_tokens')}: the added tokens' embeddings are new and would stay "
                     f"untrained under --efficient_methods={methods}: add --efficient_unfreeze_model=True, or drop "
                     f"tokenizer_add_tokens")
    decoder = config["decoder_model_path"]
    if decoder and missing_local_path(decoder):
        found.append(f"{where('decoder_model_path')}: directory {decoder} does not exist")
    return found


def _pretraining_problems(config: Config) -> list[str]:
    """Denoising replaces spans with a mask token: families known to lack one (textbox.config.families) are refused here (the collator
    checks any other loaded tokenizer; decoder-only families are refused by textbox/config/family_keys.py)."""
    name = config["model"].lower()
    if config["pretrain_task"] is None or name not in FAMILIES or FAMILIES[name].mask_token is not False:
        return []
    return [f"{config.where('pretrain_task')}: denoising replaces spans with a mask token and model {name!r}'s "
            f"tokenizer has none; use e.g. transformer, rnn/gru/lstm or a BART checkpoint"]


def _quantization_problems(config: Config) -> list[str]:
    """--quantization and its settings (textbox/model/quantization.py; the families it cannot apply to are
    refused by textbox/config/family_keys.py)."""
    return quantization.problems(dict(config.items()), lambda key: config.source_of(key) != "default", config.where,
                                 is_efficient_checkpoint(config["model_path"]))
