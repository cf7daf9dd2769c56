"""A run's own config.yaml as a layer: when resuming it (the whole config), and when ``--model_path`` is one of its
checkpoints (the model family and the settings that decide what the model reads and writes).

Standard library and yaml only: the config layer must not import the trainer (which writes these directories).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from textbox.config.schema import SCHEMA, ConfigValue

RUN_CONFIG = "config.yaml"
# The checkpoints a run writes (textbox/trainer/checkpoint.py): named here, where run directories are recognised.
LAST_CHECKPOINT = "checkpoint_last"  # what --resume continues
BEST_CHECKPOINT = "checkpoint_best"  # what the test pass (and a study's test of its best run) loads
FAILED_MARKER = "FAILED"  # a run that stopped on an error says why in it (textbox/pipeline/run_dir.py)
_CHECKPOINT_NAME = re.compile(rf"{BEST_CHECKPOINT}|{LAST_CHECKPOINT}|checkpoint-\d+")

# Keys that say how a model is built from its checkpoint or config: a checkpoint a run wrote already holds their
# effect (weights, config, tokenizer, merged or separate adapter), so testing it takes none of them again.
MODEL_BUILDING = ("config_kwargs", "tokenizer_kwargs", "from_scratch", "decoder_model_path", "efficient_methods",
                  "efficient_kwargs", "efficient_unfreeze_model", "tokenizer_add_tokens", "quantization",
                  "double_quantization", "quantization_compute_dtype", "chat_template")
# Keys that name a run rather than describe it: never taken from another run's config.yaml.
RUN_IDENTITY = ("filename", "resume", "saved_dir", "config_files")
# Testing or generating from <run>/checkpoint_*: what the model reads and writes follows the run that trained it
# (the checkpoint holds the weights, config_kwargs and tokenizer already; the data, metrics and optimiser are
# this command's own).
CHECKPOINT_SETTINGS = ("model", "src_len", "tgt_len", "truncate", "prefix_prompt", "suffix_prompt",
                       "generation_kwargs", "src_lang", "tgt_lang", "use_chat_template", "system_prompt")
# The data a run's checkpoint is tested on, unless the command names other data (DATA_NAMING): a checkpoint trained
# on samsum is tested on samsum, not on the built-in default dataset.
CHECKPOINT_DATA = ("dataset", "data_path", "catalogue", "data_format", "hub_name", "hub_subset", "split_names",
                   "src_field", "tgt_field", "group_references")
DATA_NAMING = ("dataset", "data_path", "data_format", "hub_name")
# What a resumed run may change: how long it trains, what it reports and tests, where it runs. Anything else
# (model, data, optimiser, schedule, seed, batching) would make the continued run a different run.
RESUME_MAY_CHANGE = ("epochs", "max_steps", "logging_steps", "tracker", "tracker_project",
                     "tracker_run_name", "do_test", "metrics", "eval_batch_size",
                     "eval_max_tokens", "num_workers", "cpu_memory_reuse", "gpu_id", "find_unused_parameters",
                     "max_save",
                     "decode_compile", "decoding_backend", "decoding_precision", "input_file", "output_file",
                     "show_examples", "cache_dir", "user_dir", "push_to_hub", "hub_model_id", "hub_private",
                     "num_shots", "shot_selection")  # the last two: the test pass's demonstrations
# Options of the metrics (lower_evaluation, bleu_tokenize, rouge_sentence_split, ...) say how a figure is scored:
# a resumed run may change them only while no generated figure chooses the best model. Otherwise the best score the
# run saved would keep its old definition and be compared with scores of the new one.
METRIC_OPTIONS = tuple(key.name for key in SCHEMA.values() if key.group == "metrics")
OPTION_FREE_FIGURES = ("loss", "perplexity")  # validation figures no metric option changes


def holds_run(path: str | Path | None) -> bool:
    """A directory a run wrote (its config.yaml is there)."""
    return path is not None and (Path(path).expanduser() / RUN_CONFIG).is_file()


def is_run_directory(path: str | Path | None) -> bool:
    """A run that can be continued: its config.yaml and a checkpoint_last."""
    return path is not None and holds_run(path) and (Path(path).expanduser() / LAST_CHECKPOINT).is_dir()


def failed_before_first_checkpoint(run_dir: Path) -> bool:
    """A run that stopped on an error before its first checkpoint_last: nothing in it to keep or continue."""
    return (run_dir / FAILED_MARKER).is_file() and not (run_dir / LAST_CHECKPOINT).exists()


def nothing_to_continue(run_dir: Path) -> str:
    """What --resume=True of such a run is told."""
    return (f"--resume=True: the run in {run_dir} failed before its first {LAST_CHECKPOINT} (see its "
            f"{FAILED_MARKER} and project.log): there is nothing to continue; start it again without --resume")


def run_of_checkpoint(path: str | Path | None) -> Path | None:
    """The run directory that wrote checkpoint ``path`` (checkpoint_best, checkpoint_last, checkpoint-<step>)."""
    if path is None:
        return None
    local = Path(path).expanduser()
    if local.is_dir() and _CHECKPOINT_NAME.fullmatch(local.resolve().name) and holds_run(local.resolve().parent):
        return local.resolve().parent
    return None


class ReadYaml(Protocol):
    """textbox.config.layers.read_yaml, handed in (layers.py imports this module)."""

    def __call__(self, path: Path, problems: list[str], required: bool) -> dict[str, ConfigValue]: ...


@dataclass
class RunLayer:
    """The layer a run's config.yaml contributes, where it comes from, and what it implies."""

    origin: str
    values: dict[str, ConfigValue]
    saved: dict[str, ConfigValue] = field(default_factory=dict)  # the whole saved config (resume: to compare against)
    resuming: bool = False
    implied: dict[str, ConfigValue] = field(default_factory=dict)  # keys a --model_path=<run dir> sets
    implied_origin: str = ""


def read_run_config(run_dir: Path, read_yaml: ReadYaml, problems: list[str]) -> dict[str, ConfigValue] | None:
    """The saved config of ``run_dir`` (None, with a problem, when it is missing or unreadable)."""
    path = run_dir / RUN_CONFIG
    if not path.is_file():
        problems.append(f"{run_dir} has no {RUN_CONFIG}: it is not a run directory written by run_textbox.py")
        return None
    found = len(problems)
    saved = read_yaml(path, problems, required=True)
    return saved if len(problems) == found else None


def resume_layer(run_dir: Path, read_yaml: ReadYaml, problems: list[str],
                 implied: dict[str, ConfigValue]) -> RunLayer | None:
    """Continue ``run_dir``: its whole config.yaml (but the run-identity keys) is the base layer."""
    if failed_before_first_checkpoint(run_dir):
        problems.append(nothing_to_continue(run_dir))
        return None
    saved = read_run_config(run_dir, read_yaml, problems)
    if saved is None:
        return None
    values = {key: value for key, value in saved.items() if key not in RUN_IDENTITY}
    if "model_path" in implied:
        implied["model_path"] = saved.get("model_path")  # the run's own base (None: built from scratch)
    return RunLayer(str(run_dir / RUN_CONFIG), values, saved, resuming=True, implied=implied)


def checkpoint_layer(run_dir: Path, read_yaml: ReadYaml, problems: list[str], training: bool,
                     names_data: bool) -> RunLayer | None:
    """``--model_path=<run>/checkpoint_*``: the run's model family always; when testing or generating (not
    training), also the settings that decide what the model reads and writes (lengths, prompts, generation), and
    the run's data unless the command names data of its own (``names_data``)."""
    saved = read_run_config(run_dir, read_yaml, problems)
    if saved is None:
        return None
    keys: tuple[str, ...] = ()
    if not training:  # the model: the loader's family layer (from run config)
        keys = CHECKPOINT_SETTINGS[1:] + (() if names_data else CHECKPOINT_DATA)
    return RunLayer(str(run_dir / RUN_CONFIG), {key: saved[key] for key in keys if key in saved}, saved)


def resume_changes(values: dict[str, ConfigValue], sources: dict[str, str], layer: RunLayer,
                   where: Callable[[str], str]) -> list[str]:
    """Every key this command changes in a resumed run that it may not change."""
    problems = []
    chosen_by = [str(figure) for figure in values.get("metrics_for_best_model", ())]
    scored_choice = [figure for figure in chosen_by if figure.lower() not in OPTION_FREE_FIGURES]
    for key, saved in layer.saved.items():
        if key in RUN_IDENTITY or key in RESUME_MAY_CHANGE or key not in values:
            continue
        now = values[key]
        if isinstance(now, tuple):
            now = list(now)
        if now == saved or sources.get(key) == layer.origin:
            continue
        if key in METRIC_OPTIONS:
            if scored_choice:
                problems.append(f"{where(key)}={values[key]!r} differs from {saved!r} in the run being resumed "
                                f"({layer.origin}): it changes how {', '.join(scored_choice)} (metrics_for_best_model)"
                                f" is scored, and the best score the run saved would keep its old definition; drop "
                                f"it (or start a new run)")
            continue
        problems.append(f"{where(key)}={values[key]!r} differs from {saved!r} in the run being resumed "
                        f"({layer.origin}): a resumed run keeps its model, data and optimiser settings; drop it "
                        f"(or start a new run). A resume may change only {', '.join(RESUME_MAY_CHANGE[:6])} and "
                        f"other reporting keys, and the metrics' options while the loss chooses the best model")
    return problems
