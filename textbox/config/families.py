"""What each model family (``--model``) is: the one table every layer asks.

Data (how targets are tokenised, which collator batches them), the model registry (which builder loads it),
config validation (which keys make sense: textbox.config.family_keys, beside this table), checkpoint detection
(which model_types and heads are which names, which names accept which checkpoints) and the decoding engine
(which model_types CTranslate2 converts) all need facts about a family before any model exists. Each fact is
declared here once, so that no layer keeps its own list of names. It lives in the config layer because
data/ and model/ are siblings that never import each other and both sit above config/. Standard library only:
config validation and ``--help`` import it.

A family has a *kind*: the builder that loads it and the row of textbox.config.family_keys.SUPPORT that says which keys
that builder honours (transformer, seq2seq, causal_lm, encoder_decoder, rnn). Most facts belong to the kind;
the mask token is known per name (T5 and Marian tokenizers have none).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Kinds: one builder each (textbox.model.build.BUILDERS), one row of key support each (textbox.config.family_keys).
TRANSFORMER, SEQ2SEQ, CAUSAL_LM, ENCODER_DECODER, RNN = "transformer", "seq2seq", "causal_lm", "encoder_decoder", "rnn"
RNN_MODEL_TYPE = "textbox_rnn"  # config.json's model_type of an RNN checkpoint; its ``cell`` is the family
# The config.json model_types ctranslate2.converters.TransformersConverter converts, and the CTranslate2 class that
# runs each: a Translator (encoder-decoder) or a Generator (decoder-only). A family's ``ctranslate2`` says whether
# CTranslate2 may run it at all; the checkpoint's model_type decides in the end.
CTRANSLATE2_TRANSLATOR_TYPES = ("bart", "mbart", "t5", "mt5", "marian", "pegasus", "m2m_100")
CTRANSLATE2_GENERATOR_TYPES = ("gpt2", "opt", "llama", "qwen2")

# Checkpoint detection (textbox.config.checkpoint_family): a config.json's model_type -> the --model name it is.
# Types not listed are placed by the generic rules: is_encoder_decoder, then the head its architectures name.
FAMILY_OF_MODEL_TYPE: dict[str, str] = {
    "bart": "bart", "t5": "t5", "mt5": "t5", "umt5": "t5", "mbart": "mbart", "pegasus": "pegasus",
    "pegasus_x": "pegasus", "marian": "marian", "led": "led", "blenderbot": "blenderbot",
    "blenderbot-small": "blenderbot", "prophetnet": "prophetnet", "xlm-prophetnet": "prophetnet",
    "gpt2": "gpt2", "opt": "opt", "llama": "llama",
    "encoder-decoder": "encoder_decoder",
    **{encoder: "bert2bert" for encoder in (
        "bert", "bert-generation", "roberta", "xlm-roberta", "xlm-roberta-xl", "electra", "distilbert", "albert",
        "deberta", "deberta-v2", "camembert", "mpnet", "ernie", "rembert", "megatron-bert", "roformer", "xlm",
        "flaubert", "funnel", "convbert", "modernbert", "nezha", "data2vec-text", "xmod", "mobilebert", "squeezebert",
        "ibert", "layoutlm", "canine", "big_bird", "nystromformer", "yoso", "luke", "mra")},
}
CAUSAL_HEADS = ("ForCausalLM", "LMHeadModel", "ModelWithLMHead")
SEQ2SEQ_LM_HEADS = ("ForSeq2SeqLM",)  # ForConditionalGeneration is also a multimodal decoder-only's head
ENCODER_HEADS = ("ForMaskedLM", "ForPreTraining", "ForSequenceClassification", "ForTokenClassification",
                 "ForQuestionAnswering", "ForMultipleChoice")


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
    group: str = ""  # the family its checkpoints are detected as (mt5 -> t5); "" = its own name
    registered: bool = False  # added by a --user_dir module (textbox.register_model), not by the table below
    # the keys of textbox.config.family_keys.TABLE_KEYS its builder honours, the others refused; None: its kind's
    honours: frozenset[str] | None = None

    @property
    def checkpoints(self) -> str:
        """The family a checkpoint of this model is detected as (textbox.config.checkpoint_family)."""
        return self.group or self.name

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

    def add(kind: str, *names: str, mask_token: bool | None = None, group: str = "") -> None:
        for name in names:
            table[name] = Family(name, KINDS[kind], mask_token, group)

    add(TRANSFORMER, "transformer", mask_token=True)  # the project's own BPE has <mask>
    add(SEQ2SEQ, "bart")
    add(SEQ2SEQ, "t5", mask_token=False)  # T5 has sentinel tokens instead
    add(SEQ2SEQ, "mbart", "pegasus")
    add(SEQ2SEQ, "marian", mask_token=False)
    add(SEQ2SEQ, "led", "blenderbot", "prophetnet", "seq2seq")
    add(ENCODER_DECODER, "bert2bert", "encoder_decoder")
    add(CAUSAL_LM, "causal_lm", "gpt2", "opt", "llama")
    add(RNN, "rnn", "gru", "lstm", mask_token=True)  # the cell is the name; the transformer's BPE
    # TextBox 2.0's other model names: the same builders, their checkpoints detected as ``group``.
    add(SEQ2SEQ, "mt5", "chinese-t5", mask_token=False, group="t5")
    add(SEQ2SEQ, "longt5", mask_token=False, group="seq2seq")
    add(SEQ2SEQ, "m2m_100", "nllb", "bigbird_pegasus", "mvp", group="seq2seq")
    add(SEQ2SEQ, "chinese-bart", group="bart")
    add(SEQ2SEQ, "pegasus_x", "chinese-pegasus", group="pegasus")
    add(SEQ2SEQ, "blenderbot-small", group="blenderbot")
    add(CAUSAL_LM, "gpt_neo", "openai-gpt", "ctrl", group="causal_lm")
    add(CAUSAL_LM, "chinese-gpt2", "cpm", group="gpt2")
    add(ENCODER_DECODER, "xlm-roberta", group="bert2bert")
    return table


FAMILIES: dict[str, Family] = _families()
BUILT_IN: frozenset[str] = frozenset(FAMILIES)


def register_family(name: str, kind: str, honours: frozenset[str] | None) -> Family:
    """Add ``--model=name`` of ``kind`` (a key of KINDS) whose builder honours ``honours`` (None: what its kind's do), for a --user_dir module
    (textbox.model.user_models.register_model checks the arguments). Registering a name again replaces it (a
    module imported anew); a built-in or refused name is a ValueError of one sentence."""
    if name in BUILT_IN or name in REFUSED_MODELS:
        raise ValueError(f"register_model: {name!r} is a built-in model name (--model={name}); choose another name")
    if kind not in KINDS:
        raise ValueError(f"register_model({name!r}): unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    FAMILIES[name] = Family(name, KINDS[kind], registered=True, honours=honours)  # its mask token: checked on its loaded tokenizer
    return FAMILIES[name]

# TextBox 2.0's model names with no counterpart here, and what to use instead.
REFUSED_MODELS: dict[str, str] = {
    "unilm": "UniLM's model code is not in transformers; a BERT warm-started encoder-decoder is --model=bert2bert",
    "mass": "MASS's model code is not in transformers; use --model=bart or --model=t5",
    "xlm": "XLM as an encoder-decoder with language embeddings is not provided; use --model=mbart, m2m_100 or "
           "nllb for translation (or --model=bert2bert with an XLM-RoBERTa checkpoint)",
    "cpt": "CPT's model code is not in transformers (it needs the checkpoint's own code); a Chinese BART "
           "(fnlp/bart-base-chinese) is --model=chinese-bart",
    "context-tuning": "Context-Tuning (a prompting model built on BART) is not provided; prompt methods are "
                      "--efficient_methods=['prompt-tuning'] or ['prefix-tuning']",
    "context_tuning": "Context-Tuning (a prompting model built on BART) is not provided; prompt methods are "
                      "--efficient_methods=['prompt-tuning'] or ['prefix-tuning']",
    "ptg": "PTG (prompt transfer from source tasks) is not provided; prompt methods are "
           "--efficient_methods=['prompt-tuning'] or ['prefix-tuning']",
    "pplm": "PPLM (plug-and-play attribute control at decoding) is not provided",
    "xlm-prophetnet": "XLM-ProphetNet's model code was removed from transformers 5; a multilingual encoder-decoder "
                      "is --model=mt5, mbart, m2m_100 or nllb",
}


def yaml_names(name: str) -> tuple[str, ...]:
    """configs/model/<name>.yaml to look for, first found applies: the name's own, its group's, its kind's."""
    entry = FAMILIES.get(name.lower())
    if entry is None:
        return (name.lower(),)
    return tuple(dict.fromkeys((entry.name, entry.checkpoints, entry.kind.name)))


def family(name: str) -> Family:
    """The family of ``--model=<name>`` (any case); KeyError for a name that is not one (validation names it)."""
    return FAMILIES[name.lower()]


def names_of(kind: str) -> tuple[str, ...]:
    """The ``--model`` names a kind's builder loads, in table order."""
    return tuple(name for name, entry in FAMILIES.items() if entry.kind.name == kind)


def is_decoder_only(name: str) -> bool:
    """Whether ``--model=<name>`` reads source and target as one sequence."""
    return family(name).decoder_only


def is_decoder_only_model(model: Any) -> bool:
    """Whether a built model (a torch module of any family, a checkpoint's own included) reads source and target as
    one sequence: its transformers config says so."""
    return not getattr(model.config, "is_encoder_decoder", True)
