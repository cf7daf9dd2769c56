"""Model families a --user_dir module adds with ``textbox.register_model`` (docs/extending.md "Your own model"):
``--model=<name> --user_dir=<path>`` is then checked, built, trained, tested and decoded as a built-in family is.

Two homes, one per fact: what the config layer must know before any model exists (encoder-decoder or
decoder-only, new or from a checkpoint, which keys the builder honours) goes into textbox.config.families' table;
the builder stays here, and textbox.model.build.get_builder asks for it. No torch at import: the user's module
imports this while the configuration is checked.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Iterable

from textbox.config.families import register_family
from textbox.config.family_keys import TABLE_KEYS

if TYPE_CHECKING:
    from textbox.config import Config
    from textbox.model.built_model import BuiltModel, TrainingTexts

Builder = Callable[["Config", "TrainingTexts | None"], "BuiltModel"]

_BUILDERS: dict[str, Builder] = {}
_NAME = re.compile(r"[a-z][a-z0-9_-]*")


def register_model(name: str, builder: Builder, *, kind: str, honours: Iterable[str] | None = None) -> None:
    """Make ``--model=name`` (lowercase letters, digits, _ and -) build with ``builder(config, train_split) ->
    textbox.BuiltModel``, the signature of the framework's own builders (textbox/model/transformer.py).

    ``kind`` says what the config layer needs to know, as one of the built-in kinds: "transformer" (a new
    encoder-decoder, or its saved checkpoint; no --model_path needed), "seq2seq" (an encoder-decoder loaded from
    --model_path), "causal_lm" (decoder-only, from --model_path), "encoder_decoder", "rnn". ``honours``: the keys of
    docs/model_keys.md's table the builder honours, every other one refused before the run; None (the default):
    what the kind's builder honours. A ValueError of one sentence for a built-in name or a bad argument."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"register_model: the name must be lowercase letters, digits, _ and - (starting with a "
                         f"letter), got {name!r}")
    if not callable(builder):
        raise ValueError(f"register_model({name!r}): the builder is not callable: {builder!r}")
    keys = None if honours is None else frozenset(honours)
    unknown = sorted(set(keys or ()) - set(TABLE_KEYS))
    if unknown:
        raise ValueError(f"register_model({name!r}): honours names {', '.join(map(repr, unknown))}, not keys of "
                         f"docs/model_keys.md's table ({', '.join(TABLE_KEYS)})")
    register_family(name, kind, keys)
    _BUILDERS[name] = builder


def registered_builder(name: str) -> Builder | None:
    """The builder a --user_dir module registered for ``--model=<name>`` (any case); None for other names."""
    return _BUILDERS.get(name.lower())
