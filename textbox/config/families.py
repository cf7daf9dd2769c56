"""What each model family (``--model``) is: the one table every layer asks.

Data (how targets are tokenised, which collator batches them), the model registry (which builder loads it),
config validation (which keys make sense), checkpoint detection (which names accept which checkpoints) and the
decoding engine (whether CTranslate2 can run it) all need facts about a family before any model exists. Each
fact is declared here once, so that no layer keeps its own list of names. It lives in the config layer because
data/ and model/ are siblings that never import each other and both sit above config/. Standard library only:
config validation and ``--help`` import it.

A family has a *kind*: the builder that loads it and the row of textbox.model.keys.SUPPORT that says which keys
that builder honours (transformer, seq2seq, causal_lm, encoder_decoder, rnn). Most facts belong to the kind;
the mask token is known per name (T5 and Marian tokenizers have none).
"""
from __future__ import annotations

from dataclasses import dataclass

# Kinds: one builder each (textbox.model.registry.BUILDERS), one row of key support each (textbox.model.keys).
TRANSFORMER, SEQ2SEQ, CAUSAL_LM, ENCODER_DECODER, RNN = "transformer", "seq2seq", "causal_lm", "encoder_decoder", "rnn"
RNN_MODEL_TYPE = "textbox_rnn"  # config.json's model_type of an RNN checkpoint; its ``cell`` is the family


@dataclass(frozen=True)
class Kind:
    """Facts shared by every family a builder loads."""

    name: str
    what: str  # the model, for messages: "an RNN", "an EncoderDecoderModel pair", ...
    decoder_only: bool  # source and target read as one sequence: targets are text + eos, batches are joined
    builds_new: bool  # without --model_path it builds a new model and trains its own BPE tokenizer
    ctranslate2: bool  # CTranslate2 may run it (the checkpoint's model_type decides in the end)


@dataclass(frozen=True)
class Family:
    """One ``--model`` name: its kind's facts, and whether its tokenizers have a mask token (True: always,
    False: never, None: it depends on the checkpoint, checked on the loaded tokenizer)."""

    name: str
    kind: Kind
    mask_token: bool | None = None

    @property
    def decoder_only(self) -> bool:
        return self.kind.decoder_only

    @property
    def needs_model_path(self) -> bool:
        return not self.kind.builds_new

    @property
    def ctranslate2(self) -> bool:
        return self.kind.ctranslate2


KINDS: dict[str, Kind] = {kind.name: kind for kind in (
    Kind(TRANSFORMER, "a BART-architecture Transformer", decoder_only=False, builds_new=True, ctranslate2=True),
    Kind(SEQ2SEQ, "a Hugging Face encoder-decoder", decoder_only=False, builds_new=False, ctranslate2=True),
    Kind(ENCODER_DECODER, "an EncoderDecoderModel pair", decoder_only=False, builds_new=False, ctranslate2=False),
    Kind(CAUSAL_LM, "a decoder-only LM", decoder_only=True, builds_new=False, ctranslate2=True),
    Kind(RNN, "an RNN", decoder_only=False, builds_new=True, ctranslate2=False),
)}


def _families() -> dict[str, Family]:
    table: dict[str, Family] = {}

    def add(kind: str, *names: str, mask_token: bool | None = None) -> None:
        for name in names:
            table[name] = Family(name, KINDS[kind], mask_token)

    add(TRANSFORMER, "transformer", mask_token=True)  # the project's own BPE has <mask>
    add(SEQ2SEQ, "bart")
    add(SEQ2SEQ, "t5", mask_token=False)  # T5 has sentinel tokens instead
    add(SEQ2SEQ, "mbart", "pegasus")
    add(SEQ2SEQ, "marian", mask_token=False)
    add(SEQ2SEQ, "led", "blenderbot", "prophetnet", "seq2seq")
    add(ENCODER_DECODER, "bert2bert", "encoder_decoder")
    add(CAUSAL_LM, "causal_lm", "gpt2", "opt", "llama")
    add(RNN, "rnn", "gru", "lstm", mask_token=True)  # the cell is the name; the transformer's BPE
    return table


FAMILIES: dict[str, Family] = _families()


def family(name: str) -> Family:
    """The family of ``--model=<name>`` (any case); KeyError for a name that is not one (validation names it)."""
    return FAMILIES[name.lower()]


def names_of(kind: str) -> tuple[str, ...]:
    """The ``--model`` names a kind's builder loads, in table order."""
    return tuple(name for name, entry in FAMILIES.items() if entry.kind.name == kind)


def is_decoder_only(name: str) -> bool:
    """Whether ``--model=<name>`` reads source and target as one sequence."""
    return family(name).decoder_only
