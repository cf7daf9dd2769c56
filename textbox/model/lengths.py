"""Source and target lengths fitted to the built model, before anything is tokenised or written.

Why: a catalogue entry's lengths are set for the model TextBox 2.0 reported on (samsum.yaml's ``src_len: 1024`` is
BART's), and other models cannot read them: GPT-2 holds source and target in one sequence of 1024 positions,
BERT2BERT has 512, a checkpoint trained from scratch holds what it was trained with. A longer sequence fails inside
the first training or decoding step ("IndexError: index out of range in self"). TextBox 2.0 fitted such lengths
with a warning (its AbstractDataset); so does this module, by the rule "a default adapts, a typed value is honoured":

- a length from a default or a yaml (the schema's defaults, configs/overall.yaml, the model and dataset yamls, a
  tested run's config.yaml) is lowered to what the model holds, with one log line saying what and why;
- a length the user typed (the command line, a --config_files file: ``Config.typed``) is kept, or refused with the
  fix when it cannot fit; generation_kwargs' max_new_tokens / max_length are never lowered, only checked.

What the model holds:
- an encoder-decoder: its encoder's position table bounds src_len, its decoder's the target and generation lengths
  (the tables are found in the built model, so a checkpoint's real sizes decide; T5's relative positions have none);
- a decoder-only LM: source and target share one sequence of ``max_position_embeddings``: src_len + 1 (the
  separator) + tgt_len (or the tokens generated). Two fitted lengths are lowered in proportion, TextBox 2.0's split
  (samsum on GPT-2: 1024 + 128 -> 910 + 113);
- pretrained weights: the tokenizer's ``model_max_length`` too, the length the checkpoint was trained for (T5's 512;
  TextBox 2.0 clamped to it). A typed length may exceed it where positions allow; weights built from scratch ignore it;
- virtual tokens take positions: prompt- and p-tuning's before the source (of a decoder-only LM: the sequence),
  prefix-tuning's before the decoder's tokens (the sequence); TextBox 2.0 lowered src_len by its prompt_length.

The fitted Config is what the run uses from here on (tokenisation, collation, decoding on both engines, config.yaml
and results.json's ``fitted_lengths``). Every process builds the same model and tokenizer, so every process fits
alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from textbox.config import Config, TextBoxUserError
from textbox.model.built_model import Fitting
from textbox.model.efficient import virtual_tokens

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

FITTED = "fitted to the model"  # the origin the fitted keys carry (the log's config lines, messages)
# transformers marks "no limit" with a huge model_max_length (1e30); anything this large is no limit
_NO_LIMIT = 10 ** 9
_RETYPE = "(a length from a default or a yaml is fitted to the model; one you give is kept, or refused like this)"


@dataclass
class _Room:
    """What the model holds, its description, and what fitting found."""

    what: str  # "this 'gpt2' model"
    tokenizer: int | None  # model_max_length of pretrained weights
    virtual: dict[str, int]  # side ("source", "target") -> virtual tokens there
    method: str | None
    changed: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def fit_lengths(config: Config, model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase) -> Fitting:
    """``config`` with src_len / tgt_len that are not typed lowered to what ``model`` (and its tokenizer) holds;
    TextBoxUserError naming every typed length (or generation bound) that cannot fit, with the fix."""
    model_config = getattr(model, "config", None)
    method, count = _virtual(config, model)
    encoder_decoder = bool(getattr(model_config, "is_encoder_decoder", False))
    if encoder_decoder:
        sides = {"source": count if method in ("prompt-tuning", "p-tuning") else 0,
                 "target": count if method == "prefix-tuning" else 0}
    else:
        sides = {"source": count, "target": 0}  # the one sequence holds them all
    room = _Room(f"this {getattr(model_config, 'model_type', type(model).__name__)!r} model",
                 None if config.from_scratch or not config.model_path else _tokenizer_limit(tokenizer), sides, method)
    if encoder_decoder:
        _fit_encoder_decoder(config, position_limits(model), room)
    else:
        _fit_decoder_only(config, getattr(model_config, "max_position_embeddings", None), room)
    if room.problems:
        sizing = (" (or raise max_position_embeddings with --config_kwargs: the model is built from scratch)"
                  if config.from_scratch or not config.model_path else "")
        raise TextBoxUserError("; ".join(room.problems) + sizing + ". A longer sequence would fail inside the first "
                               "training or decoding step " + _RETYPE)
    if not room.changed:
        return Fitting(config)
    changed = {key: (config[key], value) for key, value in room.changed.items()}
    origins = sorted({config.source_of(key).replace("default", "the defaults") for key in changed})
    why = (f"{'; '.join(room.reasons)} (the lengths came from {', '.join(origins)}; a --src_len/--tgt_len you give "
           f"is kept)")
    return Fitting(config.replace_from(FITTED, **room.changed), changed, why)


# --- encoder-decoders -------------------------------------------------------------------------------------------------
def _fit_encoder_decoder(config: Config, limits: dict[str, int], room: _Room) -> None:
    """src_len within the encoder's positions (less prompt tokens), the target and generation lengths within the
    decoder's (less prefix tokens); the tokenizer's model_max_length bounds fitted lengths too."""
    generation = config.generation_kwargs
    longest_bound = max(generation.get("max_new_tokens") or 0, (generation.get("max_length") or 1) - 1)
    for key, side, table in (("src_len", "source", "encoder"), ("tgt_len", "target", "decoder")):
        positions, virtual = limits.get(table), room.virtual[side]
        where = f"the model's {table}"
        if positions is not None and virtual >= positions:
            room.problems.append(f"{_virtual_named(room)}={virtual} leaves no position of {where}'s {positions} for "
                                 f"the {side}; lower num_virtual_tokens (--efficient_kwargs)")
            continue
        wanted = config[key]
        fitted = _lower(config, key, wanted, positions, room, where, virtual)
        needed = max(fitted, longest_bound) if key == "tgt_len" else fitted
        if positions is None or needed + virtual <= positions:
            continue
        if key == "tgt_len" and needed != fitted:
            named = "generation_kwargs' max_new_tokens/max_length"
            room.problems.append(f"{named}: outputs of {needed} tokens{_plus(room, virtual)} exceed the {positions} "
                                 f"positions of {where}; lower them to {positions - virtual}")
        else:
            room.problems.append(f"{config.where(key)}={wanted}{_plus(room, virtual)} exceeds the {positions} "
                                 f"positions of {where} (prompts and special tokens count); lower --{key} to "
                                 f"{positions - virtual}")


def _lower(config: Config, key: str, wanted: int, positions: int | None, room: _Room, where: str,
           virtual: int) -> int:
    """``wanted`` (a length not typed) lowered to the room on one side of an encoder-decoder."""
    if config.typed(key):
        return wanted
    bounds = [(positions - virtual, f"{where} has {positions} positions"
               + (f", {virtual} of them taken by {room.method}'s virtual tokens" if virtual else ""))] \
        if positions is not None else []
    if room.tokenizer is not None:
        bounds.append((room.tokenizer - virtual, f"the tokenizer's model_max_length is {room.tokenizer}, the length "
                                                 f"the checkpoint was trained for"
                       + (f", less {virtual} virtual tokens of {room.method}" if virtual else "")))
    if not bounds:
        return wanted
    bound, reason = min(bounds)
    if wanted <= bound or bound < 1:
        return wanted
    room.changed[key] = bound
    room.reasons.append(f"{key}: {reason}")
    return bound


# --- decoder-only LMs -------------------------------------------------------------------------------------------------
def _fit_decoder_only(config: Config, positions: object, room: _Room) -> None:
    """source + separator + target (or the generated tokens) + virtual tokens within one sequence's positions."""
    positions = positions if isinstance(positions, int) and not isinstance(positions, bool) else None
    limits = [(positions, f"{room.what} has {positions} positions")] if positions is not None else []
    if room.tokenizer is not None:
        limits.append((room.tokenizer, f"the tokenizer's model_max_length is {room.tokenizer}, the length the "
                                       f"checkpoint was trained for"))
    if limits and not _split_sequence(config, *min(limits), room):
        return
    if positions is None:
        return
    virtual = room.virtual["source"]
    generation = config.generation_kwargs
    new_tokens = generation.get("max_new_tokens") or 0
    src, tgt = room.changed.get("src_len", config.src_len), room.changed.get("tgt_len", config.tgt_len)
    generated = max(tgt, new_tokens)
    if src + 1 + generated + virtual > positions:
        given = ", ".join(config.where(key) for key in ("src_len", "tgt_len") if config.typed(key)) or \
            "src_len/tgt_len"
        bound = " (generation_kwargs' max_new_tokens)" if new_tokens > tgt else ""
        room.problems.append(
            f"src_len + separator + tgt_len{bound} = {src} + 1 + {generated}{_plus(room, virtual)} tokens ({given}) "
            f"exceed the {positions} positions of {room.what} (source and target share one sequence); lower "
            f"--src_len/--tgt_len" + (" or num_virtual_tokens" if virtual else ""))
    max_length = generation.get("max_length")
    if max_length is not None and max_length + virtual > positions:
        room.problems.append(f"--generation_kwargs: max_length={max_length} (prompt and new tokens) exceeds the "
                             f"{positions} positions of {room.what}; lower it")


def _split_sequence(config: Config, limit: int, reason: str, room: _Room) -> bool:
    """Fit the lengths not typed into ``limit`` tokens of one sequence (source, separator, target side, virtual
    tokens): two fitted lengths in proportion (TextBox 2.0's split: samsum's 1024 + 128 -> 910 + 113 in GPT-2's 1024,
    and with 100 prompt tokens 810 + 113), one fitted around the typed other. False, with
    a problem, when what is typed (or max_new_tokens, or the virtual tokens) leaves no room."""
    virtual = room.virtual["source"]
    new_tokens = config.generation_kwargs.get("max_new_tokens") or 0
    src, tgt = config.src_len, config.tgt_len
    budget = limit - 1 - virtual  # for the source and the target side
    src_typed, tgt_typed = config.typed("src_len"), config.typed("tgt_len")
    if src + max(tgt, new_tokens) <= budget or (src_typed and tgt_typed):
        return True  # fits, or is checked against the positions as typed
    if not src_typed and not tgt_typed:  # TextBox 2.0: the sequence split in proportion, the virtual tokens'
        tgt = max(1, tgt * (limit - 1) // (src + tgt))  # room then taken from the source
        src = budget - max(tgt, new_tokens)
    elif src_typed:
        tgt = min(tgt, budget - src)
    else:
        src = budget - max(tgt, new_tokens)
    if min(src, tgt) < 1:
        taken = [f"{config.where(key)}={config[key]}" for key in ("src_len", "tgt_len") if config.typed(key)]
        taken += [f"generation_kwargs' max_new_tokens={new_tokens}"] if new_tokens > config.tgt_len else []
        taken += [f"{room.method}'s num_virtual_tokens={virtual}"] if virtual else []
        taken = taken or [f"{room.what}'s {limit} positions"]
        room.problems.append(f"{' and '.join(taken)} {'leave' if len(taken) > 1 else 'leaves'} no room for the "
                             f"{'target' if src_typed else 'source'}: {reason}, which source + 1 separator + "
                             f"target{_plus(room, virtual)} share (one sequence); lower {' or '.join(taken)}")
        return False
    lowered = {key: value for key, value in (("src_len", src), ("tgt_len", tgt)) if value != config[key]}
    if not lowered:
        return True
    room.changed.update(lowered)
    room.reasons.append(f"{reason}, which source + 1 separator + target{_plus(room, virtual)} share (one sequence)"
                        + (", split in proportion as TextBox 2.0 does" if not src_typed and not tgt_typed else ""))
    return True


# --- what the model and tokenizer say ---------------------------------------------------------------------------------
# Position tables whose first usable row is not row 0: BART-style learned positions start at their ``offset`` (an
# attribute of the module); ProphetNet's start after its padding index, its decoder's one row further (measured).
_UNUSABLE_ROWS = {"ProphetNetPositionalEmbeddings": 2}
_TABLE_NAMES = ("embed_positions", "position_embeddings", "wpe")


def position_limits(model: torch.nn.Module) -> dict[str, int]:
    """{"encoder": n, "decoder": m}: the longest sequence each side's position table of an encoder-decoder can
    index (a side without a table is absent). Learned or fixed sinusoidal tables (BART, mBART, Marian, Pegasus,
    Blenderbot, LED, ProphetNet, BERT pairs) have a last row; relative or rotary positions (T5) have none."""
    limits: dict[str, int] = {}
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Embedding) or name.rsplit(".", 1)[-1] not in _TABLE_NAMES:
            continue
        side = "decoder" if ".decoder." in f".{name}" else "encoder" if ".encoder." in f".{name}" else None
        if side is None:
            continue
        unusable = getattr(module, "offset", None) or _UNUSABLE_ROWS.get(type(module).__name__, 0)
        limits[side] = min(limits.get(side, module.num_embeddings), module.num_embeddings - int(unusable))
    return limits


def _tokenizer_limit(tokenizer: object) -> int | None:
    """The tokenizer's model_max_length where it names one."""
    limit = getattr(tokenizer, "model_max_length", None)
    return limit if isinstance(limit, int) and 0 < limit < _NO_LIMIT else None


def _virtual(config: Config, model: object) -> tuple[str | None, int]:
    """The method whose virtual tokens take positions and their number: the one being applied, or the one a
    loaded prompt/prefix checkpoint carries."""
    if config.efficient_methods:
        return virtual_tokens(config)
    peft_config = getattr(model, "peft_config", None)
    if isinstance(peft_config, dict) and peft_config:
        active = next(iter(peft_config.values()))
        count = getattr(active, "num_virtual_tokens", None)
        kind = str(getattr(getattr(active, "peft_type", None), "value", "")).lower()
        method = {"prompt_tuning": "prompt-tuning", "p_tuning": "p-tuning", "prefix_tuning": "prefix-tuning"}.get(kind)
        if method is not None and isinstance(count, int):
            return method, count
    return None, 0


def _virtual_named(room: _Room) -> str:
    return f"--efficient_methods=['{room.method}']: num_virtual_tokens"


def _plus(room: _Room, virtual: int) -> str:
    return f" + {virtual} virtual tokens of {room.method}" if virtual else ""
