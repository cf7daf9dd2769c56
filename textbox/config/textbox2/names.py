"""TextBox 2.0's key names, and what each one became here: the one table, applied to every layer before merging.

A TextBox 2.0 yaml file or command line must run here unchanged where its keys mean what ours mean, and be refused
with the right pointer where they do not. Keys that TextBox 2.0 and this framework spell alike (epochs, seed,
learning_rate, metrics, ...) are ours and need no entry. Each entry below is one TextBox name that is not ours (or
whose meaning differs, value by value), and ``translate(value)`` says what it becomes:

- ``sets``: our keys set in the same layer (``resume_training=False`` -> nothing to do; ``wandb='disabled'`` ->
  ``tracker='none'``); ``entries``: entries merged into one of our dict keys (TextBox's model yamls list model
  config fields at the top level: they are ``config_kwargs`` entries here);
- ``problem``: refused, saying what to use;
- ``check``: a question on the merged configuration, for options that matter only when something else is chosen
  (``bleu_type`` when bleu is computed): None when it is fine, else the refusal.

textbox/config/textbox2/translate.py applies the table to a layer (each translation a line of the run's log) and
renders it for docs/textbox_names.md. Standard library only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

Check = Callable[[Mapping[str, Any]], "str | None"]


@dataclass(frozen=True)
class Outcome:
    """What one TextBox key with one value becomes."""

    note: str
    sets: dict[str, Any] = field(default_factory=dict)
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    problem: str | None = None
    check: Check | None = None


@dataclass(frozen=True)
class Name:
    """A TextBox 2.0 key: what it became (for the table) and how a value translates."""

    became: str
    translate: Callable[[Any], Outcome]


def _same_as(our: str, convert: Callable[[Any], Any] = lambda value: value) -> Name:
    return Name(f"`{our}`", lambda value: Outcome(f"{our}={convert(value)!r}", sets={our: convert(value)}))


def _no_effect(accepted: Callable[[Any], bool], what_we_do: str, otherwise: str) -> Name:
    """A setting that describes what this framework always does: accepted (logged) for those values, refused
    otherwise with ``otherwise``."""
    def translate(value: Any) -> Outcome:
        if accepted(value):
            return Outcome(f"no setting needed: {what_we_do}")
        return Outcome("", problem=otherwise)
    refused = "; other values refused" if otherwise else ""
    return Name(f"accepted where it describes what is done here ({what_we_do}){refused}", translate)


def _refused(pointer: str) -> Name:
    return Name(f"refused: {pointer}", lambda value: Outcome("", problem=pointer))


def _config_field(field_name: str) -> Name:
    """A model config field that TextBox's model yamls (transformer.yaml, rnn.yaml) list at the top level."""
    return Name(f"`config_kwargs['{field_name}']`",
                lambda value: Outcome(f"config_kwargs['{field_name}']={value!r}",
                                      entries={"config_kwargs": {field_name: value}}))


def _generation_setting(name: str) -> Name:
    """A generation setting that transformers 4 kept in the model config."""
    return Name(f"`generation_kwargs['{name}']`",
                lambda value: Outcome(f"generation_kwargs['{name}']={value!r}",
                                      entries={"generation_kwargs": {name: value}}))


def _metric_option(metric: str, accepted: Mapping[Any, str], pointer: str) -> Name:
    """An option of one metric: values with a counterpart here are accepted (``accepted[value]`` says what
    computes it); any other value is refused when ``metric`` is computed, and has no effect otherwise."""
    def translate(value: Any) -> Outcome:
        key = value.lower() if isinstance(value, str) else value
        if key in accepted:
            return Outcome(accepted[key])

        def check(values: Mapping[str, Any]) -> str | None:
            computed = {str(name).lower() for name in values.get("metrics", [])}
            return pointer.format(value=value) if metric in computed else None
        return Outcome(f"no effect unless metric {metric!r} is computed (then refused: {pointer.format(value=value)})",
                       check=check)
    options = ", ".join(f"{value!r} ({what})" for value, what in accepted.items())
    return Name(f"{options}; other values refused when {metric} is computed", translate)


def _shared_option(metric: str, ours: str) -> Name:
    """An option TextBox 2.0 kept per metric that one of our keys sets for several: accepted when they agree."""
    def translate(value: Any) -> Outcome:
        def check(values: Mapping[str, Any]) -> str | None:
            computed = {str(name).lower() for name in values.get("metrics", [])}
            if metric not in computed or values.get(ours) == value:
                return None
            return f"{metric} reads {ours} here (now {values.get(ours)!r}): give --{ours}={value!r}"
        return Outcome(f"{metric} reads {ours} here, which must then equal it", check=check)
    return Name(f"`{ours}` (which {metric} reads here): accepted when equal, refused otherwise", translate)


def _wandb(value: Any) -> Outcome:
    mode = str(value).lower()
    if mode == "online":
        return Outcome("tracker='wandb'", sets={"tracker": "wandb"})
    if mode in ("disabled", "false", "none"):
        return Outcome("tracker='none' (metrics.jsonl is still written)", sets={"tracker": "none"})
    return Outcome("", problem=f"wandb={value!r}: give --tracker=wandb with WANDB_MODE={mode} in the environment "
                               f"(wandb reads it), or --tracker=none")


def _use_gpu(value: Any) -> Outcome:
    if value is True:
        return Outcome("no setting needed: gpu_id says which devices (accelerate uses them)")
    if value is False:
        return Outcome("gpu_id=None (the devices the environment gives, as TextBox 2.0 did)", sets={"gpu_id": None})
    return Outcome("", problem=f"use_gpu must be True or False, got {value!r}")


def _model_name(value: Any) -> Outcome:
    def check(values: Mapping[str, Any]) -> str | None:
        model = str(values.get("model", "")).lower()
        if str(value).lower() == model:
            return None
        return (f"model_name={value!r} differs from model={values.get('model')!r}: TextBox 2.0's model_name named "
                f"the base model of a prompting model (PTG, Context-Tuning), which is not provided here; drop "
                f"model_name and give --model")
    return Outcome("no setting needed when it equals model (TextBox 2.0 set it to the lower-cased model)",
                   check=check)


def _model_type(value: Any) -> Outcome:
    def check(values: Mapping[str, Any]) -> str | None:
        if str(value).lower() == "bart" and str(values.get("model", "")).lower() in ("transformer", "bart"):
            return None
        return (f"model_type={value!r} (TextBox 2.0's transformer.yaml) describes --model=transformer, which is a "
                f"BART architecture; for another architecture from scratch give --model_path=<its checkpoint> "
                f"--from_scratch=True")
    return Outcome("no setting needed: --model=transformer is a BART architecture", check=check)


def _resume_training(value: Any) -> Outcome:
    if value is False:
        return Outcome("no setting needed: --model_path=<checkpoint> loads the model and tokenizer only")
    return Outcome("", problem="resume_training=True: to continue a run exactly (optimiser, schedule, data order) "
                               "give --model_path=saved/<run> (or --resume=True --filename=<run>); it continues "
                               "from that run's checkpoint_last")


def _adafactor_kwargs(value: Any) -> Outcome:
    def check(values: Mapping[str, Any]) -> str | None:
        if str(values.get("optimizer", "")).lower() != "adafactor":
            return None
        return ("adafactor_kwargs (TextBox 2.0: merged into optimizer_kwargs when optimizer=adafactor, its lr "
                "replacing learning_rate): give them as optimizer_kwargs and the rate as learning_rate")
    return Outcome("no effect unless optimizer=adafactor (then refused: give optimizer_kwargs)", check=check)


def _rouge_type(value: Any) -> Outcome:
    """files2rouge and rouge-score differ in how ROUGE-L finds sentences; rouge-score computes both here."""
    split = {"files2rouge": "period", "rouge-score": "punkt"}.get(str(value).lower())
    if split is not None:
        return Outcome(f"rouge_sentence_split={split!r} (ROUGE-L over {value}'s sentences; rouge is {_ROUGE_SCORE})",
                       sets={"rouge_sentence_split": split})
    return _metric_option("rouge", {}, "rouge_type={value!r} is not provided: rouge is " + _ROUGE_SCORE).translate(
        value)


_SCORING_BLEU = "sacrebleu's corpus BLEU (the bleu metric here)"
_ROUGE_SCORE = "rouge-score (Google's Python reimplementation of ROUGE-1.5.5, Porter stemming)"

TEXTBOX_NAMES: dict[str, Name] = {
    # --- general ------------------------------------------------------------------------------------------
    "use_gpu": Name("True: no setting (gpu_id decides); False: `gpu_id=None`", _use_gpu),
    "reproducibility": _no_effect(lambda value: value is True, "runs are always seeded (Python, NumPy, torch, "
                                  "data order) and resume exactly",
                                  "reproducibility=False has no counterpart (runs are always seeded): drop it"),
    "state": _no_effect(lambda value: str(value).lower() == "info", "the log is written at INFO",
                        "state: the log level is INFO here (project.log); drop state"),
    "wandb": Name("online: `tracker='wandb'`; disabled: `tracker='none'`; offline: refused (WANDB_MODE)", _wandb),
    "romanian_postprocessing": _refused("romanian_postprocessing (WMT16 Romanian normalisation) is not provided; "
                                        "BLEU is sacrebleu's on the text as generated"),
    "email": _refused("email notification is not provided; drop email"),
    "disable_tqdm": _no_effect(lambda value: value is True, "no progress bars: progress is logged every "
                               "logging_steps", "disable_tqdm=False: there are no progress bars here; progress "
                               "is logged every --logging_steps steps"),
    "resume_training": Name("False: no setting; True: refused, `--model_path=saved/<run>` continues a run",
                            _resume_training),
    "adafactor_kwargs": Name("no effect unless optimizer=adafactor; then refused (use `optimizer_kwargs`)",
                             _adafactor_kwargs),
    "device": _refused("device: the device comes from accelerate (and --gpu_id); drop device"),
    # --- training / decoding of TextBox 0.x ---------------------------------------------------------------
    "decoding_strategy": _refused("decoding_strategy (TextBox 0.x): give generation_kwargs, e.g. "
                                  "{'num_beams': 4} or {'do_sample': True, 'top_p': 0.9}"),
    "beam_size": _refused("beam_size (TextBox 0.x): give generation_kwargs={'num_beams': N}"),
    "n_grams": _refused("n_grams (TextBox 0.x): give bleu_max_ngrams / distinct_max_ngrams"),
    "tokenize_strategy": _refused("tokenize_strategy (TextBox 0.x): the tokenizer comes with the model "
                                  "(or model=transformer trains a BPE)"),
    "src_vocab_size": _refused("src_vocab_size (TextBox 0.x): give tokenizer_kwargs={'vocab_size': N} "
                               "(model=transformer, rnn, gru, lstm)"),
    "tgt_vocab_size": _refused("tgt_vocab_size (TextBox 0.x): give tokenizer_kwargs={'vocab_size': N} "
                               "(model=transformer, rnn, gru, lstm)"),
    # --- model --------------------------------------------------------------------------------------------
    "model_name": Name("no setting when it equals model; otherwise refused (PTG, Context-Tuning)", _model_name),
    "config_path": _refused("config_path: the config comes from --model_path (change settings with "
                            "config_kwargs; a new model of that architecture: --from_scratch=True)"),
    "model_type": Name("'bart' with model=transformer: no setting; otherwise refused", _model_type),
    "_name_or_path": _no_effect(lambda value: True, "a label inside TextBox's transformer.yaml, read by nothing", ""),
    "is_encoder_decoder": _no_effect(lambda value: value is True, "the transformer model is an encoder-decoder",
                                     "is_encoder_decoder=False: the transformer model is an encoder-decoder; a "
                                     "decoder-only model is --model=causal_lm"),
    "bias": _no_effect(lambda value: value is True, "the RNN layers have biases",
                       "bias=False: the RNN layers always have biases here"),
    "input_size": Name("`config_kwargs['embedding_size']` (RNN)",
                       lambda value: Outcome(f"config_kwargs['embedding_size']={value!r}",
                                             entries={"config_kwargs": {"embedding_size": value}})),
    "encoder_bidirectional": Name("`config_kwargs['bidirectional']` (RNN)",
                                  lambda value: Outcome(f"config_kwargs['bidirectional']={value!r}",
                                                        entries={"config_kwargs": {"bidirectional": value}})),
    **{name: _config_field(name) for name in (
        # TextBox 2.0's transformer.yaml (BART fields) and rnn.yaml
        "activation_dropout", "activation_function", "attention_dropout", "bos_token_id", "classifier_dropout",
        "d_model", "decoder_attention_heads", "decoder_ffn_dim", "decoder_layerdrop", "decoder_layers",
        "decoder_start_token_id", "dropout", "encoder_attention_heads", "encoder_ffn_dim", "encoder_layerdrop",
        "encoder_layers", "eos_token_id", "init_std",
        "max_position_embeddings", "pad_token_id", "scale_embedding", "use_cache", "vocab_size", "hidden_size",
        "num_layers")},
    # generation settings that transformers 4 kept in the model config (TextBox 2.0's transformer.yaml)
    **{name: _generation_setting(name) for name in ("forced_bos_token_id", "forced_eos_token_id")},
    # --- metric options -----------------------------------------------------------------------------------
    "rouge_type": Name("files2rouge: `rouge_sentence_split='period'`; rouge-score: `rouge_sentence_split='punkt'` "
                       "(both scored by rouge-score); other values refused when rouge is computed", _rouge_type),
    "chrf_type": _metric_option("chrf", {"sacrebleu": "chrF is sacrebleu's",
                                         "m-popovic": "chrF is sacrebleu's, whose statistics follow Popović's "
                                                      "chrF++.py"},
                                "chrf_type={value!r} is not provided: chrF is sacrebleu's"),
    "inter_distinct": _metric_option("distinct", {True: "distinct counts n-grams over all outputs together"},
                                     "inter_distinct={value!r} (per-sentence distinct) has no counterpart: "
                                     "distinct counts n-grams over all outputs together"),
    "unique_max_ngrams": _shared_option("unique", "distinct_max_ngrams"),
    "self_bleu_max_ngrams": _shared_option("self_bleu", "bleu_max_ngrams"),
    "is_chinese_task": _metric_option("rouge", {False: "texts are scored as written"},
                                      "is_chinese_task={value!r}: rouge-score keeps only a-z and 0-9, so ROUGE of "
                                      "Chinese text means nothing here; score Chinese with bleu "
                                      "(bleu_tokenize='zh') or chrf"),
    "remove_punc": _metric_option("bleu", {False: "punctuation is kept"},
                                  "remove_punc={value!r}: punctuation is scored as written here"),
    "post_processing": _metric_option("bleu", {}, "post_processing={value!r} (TextBox 2.0's paraphrase clean-up) "
                                                  "is not provided"),
    "sacrebleu_romanian": _metric_option("bleu", {}, "sacrebleu_romanian={value!r}: the Romanian normalisation "
                                                     "script is not provided; bleu is " + _SCORING_BLEU),
}
